/**
 * A CONDITION step's condition: one filter (field, operator, value and unit where the operator takes a
 * window) over the fields /workflows/fields offers: contact fields, events (event.<name>) and the
 * execution's context (context.<path>). A stored tree of more than one filter is shown as it is and kept.
 */
import { useId } from "react"
import { EVENT_OPERATORS, type Filter, MEMBERSHIP_OPERATORS, OPERATORS, WINDOW_OPERATORS } from "../../../../src/domain/conditions/types.ts"
import { useApiQuery } from "../../api/hooks.ts"
import type { Config } from "./StepConfig.tsx"

interface Tree {
  readonly logic: "AND" | "OR"
  readonly groups: ReadonlyArray<{ readonly filters: ReadonlyArray<Filter>; readonly conditions?: unknown }>
}

const NO_VALUE: ReadonlySet<string> = new Set(["exists", "notExists", "triggered", "notTriggered"])
const EVENT_ONLY: ReadonlySet<string> = new Set([...EVENT_OPERATORS, ...MEMBERSHIP_OPERATORS])

/** The single filter of a config ({ condition } with one filter, or the flat { field, operator, value }), if it has one. */
const singleFilter = (config: Config): Filter | undefined => {
  const tree = config.condition as Tree | undefined
  if (tree === undefined) return config.field === undefined ? undefined : (config as unknown as Filter)
  const [group, ...others] = tree.groups
  return others.length === 0 && group !== undefined && group.filters.length === 1 && group.conditions === undefined ? group.filters[0] : undefined
}

export function ConditionInput({ config, onChange }: { readonly config: Config; readonly onChange: (config: Config) => void }) {
  const fields = useApiQuery(["workflows", "fields"], (client) => client.workflows.fields({}))
  const listId = useId()
  const ids = { field: useId(), operator: useId(), value: useId(), unit: useId() }
  const filter = singleFilter(config)
  if (filter === undefined) {
    return (
      <div className="text-sm text-slate-700">
        <p>A condition of several filters (kept as it is):</p>
        <pre className="mt-1 max-h-48 overflow-auto rounded bg-slate-50 p-2 font-mono text-xs">{JSON.stringify(config.condition, null, 2)}</pre>
      </div>
    )
  }
  const fieldType = fields.data?.contactFields.find((field) => field.field === filter.field)?.type
  const write = (next: Filter) => onChange({ condition: { logic: "AND", groups: [{ filters: [next] }] } })
  const needsUnit = WINDOW_OPERATORS.has(filter.operator)
  const isEvent = filter.field.startsWith("event.") || filter.field.startsWith("email.")
  const operators = OPERATORS.filter((operator) => (isEvent ? EVENT_ONLY.has(operator) : !EVENT_ONLY.has(operator)) || operator === filter.operator)
  /** A typed value: numbers for numeric fields and windows, booleans for boolean fields. */
  const typed = (raw: string): unknown =>
    needsUnit || filter.operator === "triggeredAtLeast" || fieldType === "number"
      ? (raw.trim() === "" || !Number.isFinite(Number(raw)) ? raw : Number(raw))
      : fieldType === "boolean"
      ? raw === "true"
      : raw
  return (
    <div className="space-y-3">
      <div>
        <label htmlFor={ids.field} className="block text-sm font-medium text-slate-700">Field</label>
        <input id={ids.field} required list={listId} className="input mt-1 font-mono" placeholder="data.plan" value={filter.field}
          onChange={(event) => write({ ...filter, field: event.target.value })} />
        <datalist id={listId}>
          {fields.data?.contactFields.map((field) => <option key={field.field} value={field.field}>{field.type}</option>)}
          {fields.data?.events.map((event) => <option key={event.name} value={`event.${event.name}`}>event</option>)}
          {fields.data?.contextFields.map((field) => <option key={field} value={field}>context</option>)}
        </datalist>
        <p className="mt-1 text-xs text-slate-500">Contact fields (email, data.plan), events (event.signed-up) or the execution's context (context.plan).</p>
      </div>
      <div className="grid grid-cols-2 gap-3">
        <div>
          <label htmlFor={ids.operator} className="block text-sm font-medium text-slate-700">Operator</label>
          <select id={ids.operator} className="input mt-1" value={filter.operator}
            onChange={(event) => {
              const operator = event.target.value as Filter["operator"]
              const { unit: _unit, value: _value, ...rest } = filter
              write({ ...rest, operator, ...(NO_VALUE.has(operator) ? {} : { value: filter.value ?? "" }), ...(WINDOW_OPERATORS.has(operator) ? { unit: filter.unit ?? "days" } : {}) })
            }}>
            {operators.map((operator) => <option key={operator} value={operator}>{operator}</option>)}
          </select>
        </div>
        {!NO_VALUE.has(filter.operator) && (
          <div>
            <label htmlFor={ids.value} className="block text-sm font-medium text-slate-700">{needsUnit ? "Amount" : "Value"}</label>
            {fieldType === "boolean" && !needsUnit
              ? (
                <select id={ids.value} className="input mt-1" value={String(filter.value)} onChange={(event) => write({ ...filter, value: typed(event.target.value) })}>
                  <option value="true">true</option>
                  <option value="false">false</option>
                </select>
              )
              : <input id={ids.value} className="input mt-1" inputMode={needsUnit || fieldType === "number" ? "decimal" : undefined} value={String(filter.value ?? "")} onChange={(event) => write({ ...filter, value: typed(event.target.value) })} />}
          </div>
        )}
      </div>
      {needsUnit && (
        <div>
          <label htmlFor={ids.unit} className="block text-sm font-medium text-slate-700">Unit</label>
          <select id={ids.unit} className="input mt-1" value={filter.unit ?? "days"} onChange={(event) => write({ ...filter, unit: event.target.value as Filter["unit"] & string })}>
            <option value="minutes">minutes</option>
            <option value="hours">hours</option>
            <option value="days">days</option>
          </select>
        </div>
      )}
    </div>
  )
}
