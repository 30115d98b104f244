/** A value of custom data or a config, shown as typed text (strings quoted, so "1" and 1 differ). */
export const describeValue = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value, null, 2) ?? String(value)

export const typeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "list" : typeof value === "object" ? "object" : typeof value

export function JsonBlock({ value, label }: { readonly value: unknown; readonly label: string }) {
  return (
    <pre aria-label={label} className="max-h-96 overflow-auto rounded-lg border border-slate-200 bg-slate-900 p-4 font-mono text-xs leading-relaxed text-slate-100">
      {JSON.stringify(value, null, 2)}
    </pre>
  )
}
