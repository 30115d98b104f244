/** One filter: its field (by family), its operator, and the inputs that operator needs. */
import { useId } from "react"
import { UNITS, WINDOW_OPERATORS } from "../../../../src/domain/conditions/types.ts"
import type { FieldError } from "../../api/failure.ts"
import {
  CONTACT_FIELDS,
  ENGAGEMENT_FIELDS,
  FIELD_KINDS,
  type FieldKind,
  type Filter,
  kindOf,
  OPERATOR_LABELS,
  operatorsFor,
  type Unit,
  valueTypeOf,
  type ValueType,
  VALUELESS_OPERATORS,
  withField,
  withOperator
} from "./model.ts"
import type { Suggestions } from "./suggestions.ts"

/** Full width on a phone; on wider screens each control its own compact width, so a filter reads as one line. */
const control = "input w-full py-1.5"
const sized = (width: string) => `${control} ${width}`

const CONTACT_LABELS: Record<string, string> = { email: "Email", subscribed: "Subscribed", createdAt: "Created", updatedAt: "Updated" }

/** The field a family starts with when it is picked. */
const firstField = (kind: FieldKind, suggestions: Suggestions): string => {
  switch (kind) {
    case "contact":
      return "email"
    case "data":
      return suggestions.dataFields[0]?.field ?? "data."
    case "event":
      return `event.${suggestions.eventNames[0] ?? ""}`
    case "engagement":
      return "email.opened"
    case "segment":
      return `segment.${suggestions.segments[0]?.id ?? ""}`
  }
}

export function FilterRow({
  filter,
  path,
  errors,
  suggestions,
  onChange,
  onRemove
}: {
  readonly filter: Filter
  readonly path: string
  readonly errors: ReadonlyArray<FieldError>
  readonly suggestions: Suggestions
  readonly onChange: (filter: Filter) => void
  readonly onRemove: () => void
}) {
  const id = useId()
  const kind = kindOf(filter.field)
  const invalid = errors.length > 0
  return (
    <div
      role="group"
      aria-label="Filter"
      data-path={path}
      aria-invalid={invalid || undefined}
      aria-describedby={invalid ? `${id}-errors` : undefined}
      className={`rounded-md border bg-white p-3 ${invalid ? "border-red-400" : "border-slate-200"}`}
    >
      <div className="flex flex-wrap items-center gap-2">
        <select
          aria-label="Field type"
          className={sized("sm:w-36")}
          value={kind}
          onChange={(event) => onChange(withField(filter, firstField(event.target.value as FieldKind, suggestions)))}
        >
          {FIELD_KINDS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
        <FieldName filter={filter} kind={kind} suggestions={suggestions} onChange={(field) => onChange(withField(filter, field))} />
        <select
          aria-label="Operator"
          className={sized("sm:w-56")}
          value={filter.operator}
          onChange={(event) => onChange(withOperator(filter, event.target.value as Filter["operator"]))}
        >
          {operatorsFor(kind).map((operator) => <option key={operator} value={operator}>{OPERATOR_LABELS[operator]}</option>)}
        </select>
        <ValueInputs filter={filter} fieldTypes={suggestions.fieldTypes} onChange={onChange} />
        <button type="button" className="btn-secondary ml-auto py-1.5" onClick={onRemove} aria-label="Remove filter">Remove</button>
      </div>
      {invalid && (
        <ul id={`${id}-errors`} className="mt-2 space-y-0.5 text-sm text-red-700" data-testid="condition-error">
          {errors.map((error) => <li key={error.field + error.message}>{error.message}</li>)}
        </ul>
      )}
    </div>
  )
}

function FieldName({ filter, kind, suggestions, onChange }: {
  readonly filter: Filter
  readonly kind: FieldKind
  readonly suggestions: Suggestions
  readonly onChange: (field: string) => void
}) {
  const listId = useId()
  switch (kind) {
    case "contact":
      return (
        <select aria-label="Field" className={sized("sm:w-36")} value={filter.field} onChange={(event) => onChange(event.target.value)}>
          {CONTACT_FIELDS.map((field) => <option key={field} value={field}>{CONTACT_LABELS[field]}</option>)}
        </select>
      )
    case "engagement":
      return (
        <select aria-label="Field" className={sized("sm:w-36")} value={filter.field} onChange={(event) => onChange(event.target.value)}>
          {ENGAGEMENT_FIELDS.map((field) => <option key={field} value={`email.${field}`}>email {field}</option>)}
        </select>
      )
    case "segment": {
      const current = filter.field.slice("segment.".length)
      const known = suggestions.segments.some((segment) => segment.id === current)
      return (
        <select aria-label="Segment" className={sized("sm:w-48")} value={current} onChange={(event) => onChange(`segment.${event.target.value}`)}>
          {!known && <option value={current}>{current === "" ? "Choose a segment" : current}</option>}
          {suggestions.segments.map((segment) => <option key={segment.id} value={segment.id}>{segment.name}</option>)}
        </select>
      )
    }
    case "data":
    case "event": {
      const prefix = kind === "data" ? "data." : "event."
      const options = kind === "data" ? suggestions.dataFields.map((field) => field.field.slice(5)) : suggestions.eventNames
      return (
        <>
          <input
            aria-label={kind === "data" ? "Data key" : "Event name"}
            className={`${sized("sm:w-40")} font-mono`}
            list={listId}
            placeholder={kind === "data" ? "plan" : "purchase"}
            value={filter.field.startsWith(prefix) ? filter.field.slice(prefix.length) : filter.field}
            onChange={(event) => onChange(`${prefix}${event.target.value.trim()}`)}
            autoComplete="off"
            spellCheck={false}
          />
          <datalist id={listId}>{options.map((option) => <option key={option} value={option} />)}</datalist>
        </>
      )
    }
  }
}

const convert = (value: unknown, type: ValueType): unknown => {
  switch (type) {
    case "number": {
      const number = typeof value === "number" ? value : Number(value)
      return value === "" || Number.isNaN(number) ? "" : number
    }
    case "boolean":
      return value === true || value === "true"
    case "date":
      return typeof value === "string" && /^\d{4}-\d{2}-\d{2}/.test(value) ? value : ""
    case "text":
      return value === undefined ? "" : String(value)
  }
}

const TYPE_LABELS: Record<ValueType, string> = { text: "text", number: "number", boolean: "true/false", date: "date" }

function ValueInputs({ filter, fieldTypes, onChange }: {
  readonly filter: Filter
  readonly fieldTypes: ReadonlyMap<string, string>
  readonly onChange: (filter: Filter) => void
}) {
  const { operator } = filter
  const set = (patch: Partial<Filter>) => onChange({ ...filter, ...patch })
  const numberValue = (value: string) => (value === "" ? "" : Number(value))

  if (WINDOW_OPERATORS.has(operator)) {
    return (
      <>
        <input aria-label="Amount" type="number" min={1} className={sized("sm:w-20")} value={String(filter.value ?? "")} onChange={(event) => set({ value: numberValue(event.target.value) })} />
        <UnitSelect unit={filter.unit} onChange={(unit) => set({ unit })} />
      </>
    )
  }
  if (VALUELESS_OPERATORS.has(operator)) return null
  switch (operator) {
    case "triggeredAtLeast": {
      const windowed = filter.within !== undefined
      return (
        <>
          <input aria-label="Times" type="number" min={1} step={1} className={sized("sm:w-20")} value={String(filter.value ?? "")} onChange={(event) => set({ value: numberValue(event.target.value) })} />
          <span className="text-sm text-slate-600">times</span>
          <label className="flex items-center gap-1.5 text-sm text-slate-700">
            <input
              type="checkbox"
              checked={windowed}
              onChange={(event) => {
                if (event.target.checked) onChange({ ...filter, within: 30, unit: filter.unit ?? "days" })
                else {
                  const { within: _, unit: __, ...rest } = filter
                  onChange(rest)
                }
              }}
            />
            within the last
          </label>
          {windowed && (
            <>
              <input aria-label="Within" type="number" min={1} className={sized("sm:w-20")} value={String(filter.within ?? "")} onChange={(event) => set({ within: numberValue(event.target.value) as number })} />
              <UnitSelect unit={filter.unit} onChange={(unit) => set({ unit })} />
            </>
          )}
        </>
      )
    }
    case "contains":
    case "notContains":
      return <input aria-label="Value" className={sized("sm:w-40")} value={String(filter.value ?? "")} onChange={(event) => set({ value: event.target.value })} />
    default: {
      const type = valueTypeOf(filter, fieldTypes)
      const comparison = operator !== "equals" && operator !== "notEquals"
      const fixed = filter.field === "subscribed" || filter.field === "createdAt" || filter.field === "updatedAt" || filter.field === "email"
      const types: ReadonlyArray<ValueType> = comparison ? ["number", "date"] : ["text", "number", "boolean", "date"]
      const shown: ValueType = types.includes(type) ? type : types[0]!
      return (
        <>
          {!fixed && (
            <select aria-label="Value type" className={sized("sm:w-28")} value={shown} onChange={(event) => set({ value: convert(filter.value, event.target.value as ValueType) })}>
              {types.map((option) => <option key={option} value={option}>{TYPE_LABELS[option]}</option>)}
            </select>
          )}
          <TypedValue type={shown} value={filter.value} onChange={(value) => set({ value })} />
        </>
      )
    }
  }
}

function TypedValue({ type, value, onChange }: { readonly type: ValueType; readonly value: unknown; readonly onChange: (value: unknown) => void }) {
  switch (type) {
    case "boolean":
      return (
        <select aria-label="Value" className={sized("sm:w-24")} value={String(value === true)} onChange={(event) => onChange(event.target.value === "true")}>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      )
    case "number":
      return <input aria-label="Value" type="number" className={sized("sm:w-28")} value={String(value ?? "")} onChange={(event) => onChange(event.target.value === "" ? "" : Number(event.target.value))} />
    case "date":
      return <input aria-label="Value" type="date" className={sized("sm:w-40")} value={typeof value === "string" ? value.slice(0, 10) : ""} onChange={(event) => onChange(event.target.value)} />
    case "text":
      return <input aria-label="Value" className={sized("sm:w-40")} value={String(value ?? "")} onChange={(event) => onChange(event.target.value)} />
  }
}

function UnitSelect({ unit, onChange }: { readonly unit: Unit | undefined; readonly onChange: (unit: Unit) => void }) {
  return (
    <select aria-label="Unit" className={sized("sm:w-28")} value={unit ?? "days"} onChange={(event) => onChange(event.target.value as Unit)}>
      {(Object.keys(UNITS) as Array<Unit>).map((option) => <option key={option} value={option}>{option}</option>)}
    </select>
  )
}
