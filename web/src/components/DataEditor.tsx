/**
 * An editor of a contact's custom data (its rows also serve Add contact) that keeps each value's type: text, number, true/false, date
 * (an ISO 8601 string, as the API stores dates) or JSON (objects and lists). It answers the patch the
 * API takes: the changed keys with their typed values, and null for each key removed (or renamed).
 */
import { useId, useState } from "react"
import type { ApiFailure } from "../api/failure.ts"
import { MutationError } from "./Form.tsx"

export const VALUE_TYPES = ["text", "number", "boolean", "date", "json"] as const
export type ValueType = typeof VALUE_TYPES[number]

interface Row {
  readonly id: number
  readonly key: string
  readonly type: ValueType
  readonly text: string
}

/** The type a stored value is edited and shown as: ISO 8601 strings are dates. */
export const valueTypeOf = (value: unknown): string =>
  typeof value === "string" && ISO_DATE.test(value) && !Number.isNaN(Date.parse(value)) ? "date" : value === null ? "null" : Array.isArray(value) ? "list" : typeof value

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/

const rowOf = (id: number, key: string, value: unknown): Row =>
  typeof value === "number"
    ? { id, key, type: "number", text: String(value) }
    : typeof value === "boolean"
    ? { id, key, type: "boolean", text: String(value) }
    : typeof value === "string"
    ? { id, key, type: ISO_DATE.test(value) && !Number.isNaN(Date.parse(value)) ? "date" : "text", text: value }
    : { id, key, type: "json", text: JSON.stringify(value, null, 2) }

/** The typed value of a row, or why it has none. */
export const parseValue = (type: ValueType, text: string): { value: unknown } | { error: string } => {
  switch (type) {
    case "text":
      return text === "" ? { error: "Empty text is not stored: remove the field instead" } : { value: text }
    case "number": {
      const number = text.trim() === "" ? Number.NaN : Number(text)
      return Number.isFinite(number) ? { value: number } : { error: "Not a number" }
    }
    case "boolean":
      return { value: text === "true" }
    case "date": {
      const trimmed = text.trim()
      if (!ISO_DATE.test(trimmed) || Number.isNaN(Date.parse(trimmed))) return { error: "A date such as 2026-01-31 or 2026-01-31T09:30:00Z" }
      return { value: /^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? trimmed : new Date(trimmed).toISOString() }
    }
    case "json":
      try {
        const value: unknown = JSON.parse(text)
        return value === null ? { error: "null removes a field: use Remove" } : { value }
      } catch {
        return { error: "Not valid JSON" }
      }
  }
}

const defaultText = (type: ValueType, text: string) =>
  type === "boolean" ? (text === "false" ? "false" : "true") : type === "json" && text === "" ? "{}" : text

/**
 * The rows being edited and what they amount to: `collect` checks every row (showing each problem at its
 * row) and answers the patch, or undefined while a row is wrong.
 */
export const useDataFields = (initial: Readonly<Record<string, unknown>>) => {
  const [rows, setRows] = useState<ReadonlyArray<Row>>(() => Object.entries(initial).map(([key, value], index) => rowOf(index, key, value)))
  const [nextId, setNextId] = useState(rows.length)
  const [problems, setProblems] = useState<ReadonlyMap<number, string>>(new Map())
  const change = (id: number, fields: Partial<Row>) => {
    setRows((current) => current.map((row) => (row.id === id ? { ...row, ...fields } : row)))
    // A problem is about the value it was found in: it goes once the row changes (Save checks again).
    if (problems.has(id)) setProblems(new Map([...problems].filter(([other]) => other !== id)))
  }
  const add = () => {
    setRows((current) => [...current, { id: nextId, key: "", type: "text", text: "" }])
    setNextId(nextId + 1)
  }
  const remove = (id: number) => setRows((current) => current.filter((other) => other.id !== id))
  const collect = (): Record<string, unknown> | undefined => {
    const found = new Map<number, string>()
    const patch: Record<string, unknown> = {}
    const seen = new Set<string>()
    for (const row of rows) {
      const key = row.key.trim()
      if (key === "") found.set(row.id, "A field needs a name")
      else if (seen.has(key)) found.set(row.id, "Another field has this name")
      seen.add(key)
      const parsed = parseValue(row.type, row.text)
      if ("error" in parsed) found.set(row.id, found.get(row.id) ?? parsed.error)
      else if (key !== "") patch[key] = parsed.value
    }
    setProblems(found)
    if (found.size > 0) return undefined
    for (const key of Object.keys(initial)) if (!seen.has(key)) patch[key] = null
    return patch
  }
  return { rows, problems, change, add, remove, collect }
}

export type DataFieldsState = ReturnType<typeof useDataFields>

/** The rows of custom data, each with its name, type and value, and Add field. */
export function DataFields({ fields, children }: { readonly fields: DataFieldsState; readonly children?: React.ReactNode }) {
  const idPrefix = useId()
  const { rows, problems, change, add, remove } = fields
  return (
    <>
      {rows.length === 0 && <p className="mb-3 text-sm text-slate-500">No fields. Add one below.</p>}
      <ul className="space-y-3">
        {rows.map((row) => {
          const id = `${idPrefix}-${row.id}`
          const problem = problems.get(row.id)
          return (
            <li key={row.id} className="grid grid-cols-1 gap-2 border-b border-slate-100 pb-3 sm:grid-cols-[12rem_8rem_1fr_auto] sm:items-start">
              <input
                className="input font-mono"
                aria-label="Field name"
                value={row.key}
                onChange={(event) => change(row.id, { key: event.target.value })}
                placeholder="name"
              />
              <select
                className="input"
                aria-label={`Type of ${row.key || "the new field"}`}
                value={row.type}
                onChange={(event) => {
                  const type = event.target.value as ValueType
                  change(row.id, { type, text: defaultText(type, row.text) })
                }}
              >
                {VALUE_TYPES.map((type) => <option key={type} value={type}>{type}</option>)}
              </select>
              <div className="min-w-0">
                {row.type === "boolean"
                  ? (
                    <select className="input" aria-label={`Value of ${row.key || "the new field"}`} value={row.text} onChange={(event) => change(row.id, { text: event.target.value })}>
                      <option value="true">true</option>
                      <option value="false">false</option>
                    </select>
                  )
                  : row.type === "json"
                  ? (
                    <textarea
                      className="input min-h-20 font-mono text-xs"
                      aria-label={`Value of ${row.key || "the new field"}`}
                      value={row.text}
                      spellCheck={false}
                      onChange={(event) => change(row.id, { text: event.target.value })}
                    />
                  )
                  : (
                    <input
                      className="input font-mono"
                      aria-label={`Value of ${row.key || "the new field"}`}
                      inputMode={row.type === "number" ? "decimal" : undefined}
                      placeholder={row.type === "date" ? "2026-01-31T09:30:00Z" : undefined}
                      value={row.text}
                      onChange={(event) => change(row.id, { text: event.target.value })}
                      aria-invalid={problem !== undefined}
                      aria-describedby={problem ? `${id}-problem` : undefined}
                    />
                  )}
                {problem && <p id={`${id}-problem`} role="alert" className="mt-1 text-xs text-red-700">{problem}</p>}
              </div>
              <button type="button" className="btn-secondary px-2 py-1 text-xs" onClick={() => remove(row.id)}>
                Remove<span className="sr-only"> {row.key}</span>
              </button>
            </li>
          )
        })}
      </ul>
      <div className="mt-4 flex flex-wrap gap-2">
        <button type="button" className="btn-secondary" onClick={add}>Add field</button>
        {children}
      </div>
    </>
  )
}

export function DataEditor({ initial, busy, error, onSave, onCancel }: {
  readonly initial: Readonly<Record<string, unknown>>
  readonly busy: boolean
  readonly error: ApiFailure | null
  readonly onSave: (patch: Record<string, unknown>) => void
  readonly onCancel: () => void
}) {
  const fields = useDataFields(initial)
  return (
    <form
      className="rounded-lg border border-slate-200 bg-white p-4"
      aria-label="Edit custom data"
      onSubmit={(event) => {
        event.preventDefault()
        const patch = fields.collect()
        if (patch) onSave(patch)
      }}
    >
      <DataFields fields={fields}>
        <span className="flex-1" />
        <button type="button" className="btn-secondary" onClick={onCancel}>Cancel</button>
        <button type="submit" className="btn-primary" disabled={busy}>Save data</button>
      </DataFields>
      <MutationError error={error} />
    </form>
  )
}
