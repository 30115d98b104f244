/**
 * The condition builder's model: the API's condition JSON itself (src/domain/conditions), edited by
 * path, with what each kind of field allows (operators, value inputs) and where the API's 422 errors
 * (`condition.groups[0].filters[1].value`) belong in the tree.
 */
import {
  type Condition,
  EVENT_OPERATORS,
  type Filter,
  type Group,
  MEMBERSHIP_OPERATORS,
  type Operator,
  parseField,
  type Unit,
  VALUE_OPERATORS,
  WINDOW_OPERATORS
} from "../../../../src/domain/conditions/types.ts"
import type { FieldError } from "../../api/failure.ts"

export type { Condition, Filter, Group, Operator, Unit }

/** How a field is picked: the five families of the language. */
export type FieldKind = "contact" | "data" | "event" | "engagement" | "segment"

export const FIELD_KINDS: ReadonlyArray<readonly [FieldKind, string]> = [
  ["contact", "Contact"],
  ["data", "Custom data"],
  ["event", "Event"],
  ["engagement", "Email engagement"],
  ["segment", "Segment"]
]

export const CONTACT_FIELDS = ["email", "subscribed", "createdAt", "updatedAt"] as const

/** The engagement fields, one per emitted event (the language's aliases are left out). */
export const ENGAGEMENT_FIELDS = ["sent", "delivered", "opened", "clicked", "bounced", "complained"] as const

export const kindOf = (field: string): FieldKind => {
  const ref = parseField(field)
  if (ref === undefined) return field.startsWith("event.") ? "event" : field.startsWith("segment") ? "segment" : "data"
  switch (ref.kind) {
    case "email":
    case "subscribed":
    case "timestamp":
      return "contact"
    case "data":
      return "data"
    case "segment":
      return "segment"
    case "event":
      return field.startsWith("email.") ? "engagement" : "event"
  }
}

export const operatorsFor = (kind: FieldKind): ReadonlyArray<Operator> =>
  kind === "event" || kind === "engagement" ? EVENT_OPERATORS : kind === "segment" ? MEMBERSHIP_OPERATORS : VALUE_OPERATORS

export const OPERATOR_LABELS: Readonly<Record<Operator, string>> = {
  equals: "is",
  notEquals: "is not",
  contains: "contains",
  notContains: "does not contain",
  greaterThan: "is greater than / after",
  lessThan: "is less than / before",
  greaterThanOrEqual: "is at least / on or after",
  lessThanOrEqual: "is at most / on or before",
  exists: "is set",
  notExists: "is not set",
  within: "is within the last",
  olderThan: "is older than",
  triggered: "happened",
  triggeredWithin: "happened within the last",
  triggeredOlderThan: "last happened more than … ago",
  notTriggered: "never happened",
  notTriggeredWithin: "did not happen within the last",
  triggeredAtLeast: "happened at least",
  memberOfSegment: "is a member",
  notMemberOfSegment: "is not a member"
}

/** What a value is typed as, for the inputs of `equals`, comparisons and contains. */
export type ValueType = "text" | "number" | "boolean" | "date"

/** The value type a field's values have: fixed for standard fields, from /contacts/fields (or the value) for data. */
export const valueTypeOf = (filter: Filter, fieldTypes: ReadonlyMap<string, string>): ValueType => {
  if (filter.field === "subscribed") return "boolean"
  if (filter.field === "createdAt" || filter.field === "updatedAt") return "date"
  if (filter.field === "email") return "text"
  const value = filter.value
  if (typeof value === "number") return "number"
  if (typeof value === "boolean") return "boolean"
  const known = fieldTypes.get(filter.field)
  if (typeof value === "string" && value !== "" && known !== "date") return /^\d{4}-\d{2}-\d{2}/.test(value) ? "date" : "text"
  return known === "number" ? "number" : known === "boolean" ? "boolean" : known === "date" ? "date" : "text"
}

/** The operator's value when it changes: keeps what still fits, else a fresh default. */
/** Operators that take no value: the field (or event, or segment) alone says it. */
export const VALUELESS_OPERATORS: ReadonlySet<Operator> = new Set([
  "exists",
  "notExists",
  "triggered",
  "notTriggered",
  "memberOfSegment",
  "notMemberOfSegment"
])

export const withOperator = (filter: Filter, operator: Operator): Filter => {
  const { field } = filter
  if (WINDOW_OPERATORS.has(operator)) {
    return { field, operator, value: typeof filter.value === "number" && filter.value > 0 ? filter.value : 7, unit: filter.unit ?? "days" }
  }
  if (VALUELESS_OPERATORS.has(operator)) return { field, operator }
  switch (operator) {
    case "triggeredAtLeast":
      return { field, operator, value: Number.isInteger(filter.value) && (filter.value as number) > 0 ? filter.value : 1 }
    default: {
      const keep = filter.value !== undefined && !WINDOW_OPERATORS.has(filter.operator) && filter.operator !== "triggeredAtLeast"
      return {
        field,
        operator,
        value: keep ? filter.value : field === "subscribed" ? true : ""
      }
    }
  }
}

/** A filter of a new field: the first operator it allows, with its default value. */
export const withField = (filter: Filter, field: string): Filter => {
  const operators = operatorsFor(kindOf(field))
  const operator = operators.includes(filter.operator) && kindOf(field) === kindOf(filter.field) ? filter.operator : operators[0]!
  return kindOf(field) === kindOf(filter.field) && field !== "subscribed" && filter.field !== "subscribed"
    ? { ...filter, field }
    : withOperator({ field, operator }, operator)
}

/** A new filter: "email is set", which every contact matches, so a new tree is valid from the start. */
export const newFilter = (): Filter => ({ field: "email", operator: "exists" })
export const newGroup = (): Group => ({ filters: [newFilter()] })
export const newCondition = (): Condition => ({ logic: "AND", groups: [newGroup()] })

/** A tree that is not (yet) a condition object becomes an editable one. */
export const asCondition = (value: unknown): Condition =>
  typeof value === "object" && value !== null && Array.isArray((value as Condition).groups) ? value as Condition : newCondition()

/** The path of a node below `base` the way the API names it. */
export const childPath = (base: string, key: string) => (base === "" ? key : `${base}.${key}`)

/**
 * The errors that belong to the node at `path`: those naming it or one of its own keys (`path.value`),
 * not those of nested nodes (`path.groups[0]…` belongs to the group).
 */
export const errorsAt = (errors: ReadonlyArray<FieldError>, path: string, ownKeys: ReadonlyArray<string>): ReadonlyArray<FieldError> =>
  errors.filter((error) => error.field === path || ownKeys.some((key) => error.field === childPath(path, key)))

export const FILTER_KEYS = ["field", "operator", "value", "unit", "within"] as const
export const GROUP_KEYS = ["filters"] as const
export const TREE_KEYS = ["logic", "groups"] as const

/** JSON with sorted keys: trees compared as values (the API stores them as jsonb, which reorders keys). */
const stable = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(stable)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(Object.keys(value).sort().map((key) => [key, stable((value as Record<string, unknown>)[key])]))
    : value

export const sameTree = (a: unknown, b: unknown): boolean => JSON.stringify(stable(a)) === JSON.stringify(stable(b))
