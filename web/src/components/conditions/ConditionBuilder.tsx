/**
 * The condition builder: the whole condition language (AND/OR groups of filters, nested conditions up
 * to MAX_DEPTH) over the API's own condition JSON, so segments, campaign audiences and workflow
 * CONDITION steps all use it. `errors` are a 422's field errors; each is shown at the node its path
 * names (`path` is where the condition sits in the request body: `condition`, `audienceCondition`, …).
 *
 *   <ConditionBuilder value={condition} onChange={setCondition} path="condition" errors={failure?.fieldErrors} />
 */
import { MAX_DEPTH } from "../../../../src/domain/conditions/types.ts"
import type { FieldError } from "../../api/failure.ts"
import { FilterRow } from "./FilterRow.tsx"
import {
  childPath,
  type Condition,
  errorsAt,
  GROUP_KEYS,
  type Group,
  newCondition,
  newFilter,
  newGroup,
  TREE_KEYS
} from "./model.ts"
import { type Suggestions, useSuggestions } from "./suggestions.ts"

export { asCondition, newCondition } from "./model.ts"

export function ConditionBuilder({
  value,
  onChange,
  path = "condition",
  errors = [],
  label = "Condition"
}: {
  readonly value: Condition
  readonly onChange: (condition: Condition) => void
  readonly path?: string
  readonly errors?: ReadonlyArray<FieldError>
  readonly label?: string
}) {
  const suggestions = useSuggestions()
  return (
    <div role="group" aria-label={label} className="min-w-0">
      <Tree condition={value} onChange={onChange} path={path} errors={errors} depth={1} suggestions={suggestions} />
    </div>
  )
}

function Errors({ errors }: { readonly errors: ReadonlyArray<FieldError> }) {
  if (errors.length === 0) return null
  return (
    <ul className="mb-2 space-y-0.5 text-sm text-red-700" data-testid="condition-error">
      {errors.map((error) => <li key={error.field + error.message}>{error.message}</li>)}
    </ul>
  )
}

function Tree({ condition, onChange, path, errors, depth, suggestions, onRemove }: {
  readonly condition: Condition
  readonly onChange: (condition: Condition) => void
  readonly path: string
  readonly errors: ReadonlyArray<FieldError>
  readonly depth: number
  readonly suggestions: Suggestions
  readonly onRemove?: () => void
}) {
  const setGroup = (index: number, group: Group) => onChange({ ...condition, groups: condition.groups.map((g, i) => (i === index ? group : g)) })
  const removeGroup = (index: number) => onChange({ ...condition, groups: condition.groups.filter((_, i) => i !== index) })
  const joiner = condition.logic === "OR" ? "or" : "and"
  return (
    <div data-path={path} className={depth > 1 ? "rounded-md border border-indigo-200 bg-indigo-50/40 p-2 sm:p-3" : ""}>
      <Errors errors={errorsAt(errors, path, TREE_KEYS)} />
      <div className="mb-2 flex flex-wrap items-center gap-2 text-sm text-slate-700">
        <label className="flex items-center gap-2">
          Match
          <select
            aria-label={depth > 1 ? "Nested match" : "Match"}
            className="input w-auto"
            value={condition.logic}
            onChange={(event) => onChange({ ...condition, logic: event.target.value as Condition["logic"] })}
          >
            <option value="AND">all</option>
            <option value="OR">any</option>
          </select>
          of these groups
        </label>
        {onRemove && <button type="button" className="btn-secondary ml-auto" onClick={onRemove}>Remove nested condition</button>}
      </div>
      <ol className="space-y-2">
        {condition.groups.map((group, index) => (
          <li key={index}>
            {index > 0 && <p className="mb-2 text-xs font-semibold uppercase tracking-wide text-indigo-700" aria-hidden="true">{joiner}</p>}
            <GroupBox
              group={group}
              index={index}
              path={childPath(path, `groups[${index}]`)}
              errors={errors}
              depth={depth}
              suggestions={suggestions}
              onChange={(next) => setGroup(index, next)}
              onRemove={condition.groups.length > 1 ? () => removeGroup(index) : undefined}
            />
          </li>
        ))}
      </ol>
      <button type="button" className="btn-secondary mt-2" onClick={() => onChange({ ...condition, groups: [...condition.groups, newGroup()] })}>
        Add group
      </button>
    </div>
  )
}

function GroupBox({ group, index, path, errors, depth, suggestions, onChange, onRemove }: {
  readonly group: Group
  readonly index: number
  readonly path: string
  readonly errors: ReadonlyArray<FieldError>
  readonly depth: number
  readonly suggestions: Suggestions
  readonly onChange: (group: Group) => void
  readonly onRemove: (() => void) | undefined
}) {
  const filters = group.filters ?? []
  const setFilters = (next: Group["filters"]) => onChange({ ...group, filters: next })
  const withoutNested = () => {
    const { conditions: _, ...rest } = group
    onChange(rest)
  }
  return (
    <div role="group" aria-label={`Group ${index + 1}`} data-path={path} className="rounded-md border border-slate-200 bg-slate-50 p-2 sm:p-3">
      <Errors errors={errorsAt(errors, path, GROUP_KEYS)} />
      <div className="space-y-2">
        {filters.map((filter, filterIndex) => {
          const filterPath = childPath(path, `filters[${filterIndex}]`)
          return (
            <div key={filterIndex}>
              {filterIndex > 0 && <p className="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500" aria-hidden="true">and</p>}
              <FilterRow
                filter={filter}
                path={filterPath}
                errors={errors.filter((error) => error.field === filterPath || error.field.startsWith(`${filterPath}.`))}
                suggestions={suggestions}
                onChange={(next) => setFilters(filters.map((f, i) => (i === filterIndex ? next : f)))}
                onRemove={() => setFilters(filters.filter((_, i) => i !== filterIndex))}
              />
            </div>
          )
        })}
        {group.conditions !== undefined && (
          <div>
            {filters.length > 0 && <p className="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500" aria-hidden="true">and</p>}
            <Tree
              condition={group.conditions}
              path={childPath(path, "conditions")}
              errors={errors}
              depth={depth + 1}
              suggestions={suggestions}
              onChange={(conditions) => onChange({ ...group, conditions })}
              onRemove={withoutNested}
            />
          </div>
        )}
      </div>
      <div className="mt-2 flex flex-wrap gap-2">
        <button type="button" className="btn-secondary" onClick={() => setFilters([...filters, newFilter()])}>Add filter</button>
        {group.conditions === undefined && depth < MAX_DEPTH && (
          <button type="button" className="btn-secondary" onClick={() => onChange({ ...group, conditions: { ...newCondition(), logic: "OR" } })}>
            Add nested group
          </button>
        )}
        {onRemove && <button type="button" className="btn-secondary" onClick={onRemove}>Remove group</button>}
      </div>
    </div>
  )
}
