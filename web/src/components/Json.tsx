import { displayValue } from "./words.ts"

export const typeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "list" : typeof value === "object" ? "object" : typeof value

export function JsonBlock({ value, label }: { readonly value: unknown; readonly label: string }) {
  return (
    <pre aria-label={label} className="max-h-96 overflow-auto rounded-lg border border-slate-200 bg-slate-900 p-4 font-mono text-xs leading-relaxed text-slate-100">
      {JSON.stringify(value, null, 2)}
    </pre>
  )
}

/** An object's keys and values, each pair as people read it (`source ads`, `plan pro`), wrapping as needed. */
export function DataPairs({ data, label }: { readonly data: Readonly<Record<string, unknown>>; readonly label: string }) {
  return (
    <dl aria-label={label} className="mt-1 flex flex-wrap gap-x-4 gap-y-1 text-xs">
      {Object.entries(data).map(([key, value]) => (
        <div key={key} className="min-w-0 break-all">
          <dt className="inline font-mono text-slate-500">{key}</dt>{" "}
          <dd className="inline text-slate-800">{displayValue(value)}</dd>
        </div>
      ))}
    </dl>
  )
}
