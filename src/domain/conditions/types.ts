/**
 * The condition language shared by segments, campaign audiences and workflow CONDITION steps:
 * `{ logic: "AND"|"OR", groups: [ { filters: [...], conditions?: <tree> } ] }`.
 */

export type Logic = "AND" | "OR"

export interface Filter {
  readonly field: string
  readonly operator: Operator
  readonly value?: unknown
  readonly unit?: Unit
  /** Window amount for `triggeredAtLeast` (with `unit`). */
  readonly within?: number
}

export interface Group {
  readonly filters: ReadonlyArray<Filter>
  readonly conditions?: Condition
}

export interface Condition {
  readonly logic: Logic
  readonly groups: ReadonlyArray<Group>
}

export const VALUE_OPERATORS = [
  "equals",
  "notEquals",
  "contains",
  "notContains",
  "greaterThan",
  "lessThan",
  "greaterThanOrEqual",
  "lessThanOrEqual",
  "exists",
  "notExists",
  "within",
  "olderThan"
] as const

export const EVENT_OPERATORS = [
  "triggered",
  "triggeredWithin",
  "triggeredOlderThan",
  "notTriggered",
  "notTriggeredWithin",
  "triggeredAtLeast"
] as const

export const MEMBERSHIP_OPERATORS = ["memberOfSegment", "notMemberOfSegment"] as const

export const OPERATORS = [...VALUE_OPERATORS, ...EVENT_OPERATORS, ...MEMBERSHIP_OPERATORS] as const
export type Operator = typeof OPERATORS[number]
export type ValueOperator = typeof VALUE_OPERATORS[number]
export type EventOperator = typeof EVENT_OPERATORS[number]

export const UNITS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const
export type Unit = keyof typeof UNITS

/** Operators that need a `unit` (and a numeric amount). */
export const WINDOW_OPERATORS: ReadonlySet<Operator> = new Set([
  "within",
  "olderThan",
  "triggeredWithin",
  "triggeredOlderThan",
  "notTriggeredWithin"
])

export const MAX_DEPTH = 5
export const MAX_FILTERS = 100

/** Engagement fields (`email.opened`, …) read the aggregates of these emitted event names. */
export const ENGAGEMENT_EVENTS: Readonly<Record<string, string>> = {
  sent: "email.sent",
  delivered: "email.delivery",
  delivery: "email.delivery",
  opened: "email.open",
  open: "email.open",
  clicked: "email.click",
  click: "email.click",
  bounced: "email.bounce",
  bounce: "email.bounce",
  complained: "email.complaint",
  complaint: "email.complaint"
}

/** What a field names: a contact value, an event aggregate, or a segment membership. */
export type FieldRef =
  | { readonly kind: "email" }
  | { readonly kind: "subscribed" }
  | { readonly kind: "timestamp"; readonly column: "createdAt" | "updatedAt" }
  | { readonly kind: "data"; readonly path: ReadonlyArray<string> }
  | { readonly kind: "event"; readonly name: string }
  | { readonly kind: "segment"; readonly segmentId: string | undefined }

export const parseField = (field: string): FieldRef | undefined => {
  if (field === "email") return { kind: "email" }
  if (field === "subscribed") return { kind: "subscribed" }
  if (field === "createdAt" || field === "updatedAt") return { kind: "timestamp", column: field }
  if (field.startsWith("data.")) {
    const path = field.slice(5).split(".")
    return path.every((part) => part.length > 0) ? { kind: "data", path } : undefined
  }
  if (field.startsWith("event.")) {
    const name = field.slice(6)
    return name.length > 0 ? { kind: "event", name } : undefined
  }
  if (field.startsWith("email.")) {
    const name = ENGAGEMENT_EVENTS[field.slice(6)]
    return name ? { kind: "event", name } : undefined
  }
  if (field === "segment") return { kind: "segment", segmentId: undefined }
  if (field.startsWith("segment.")) {
    const id = field.slice(8)
    return id.length > 0 ? { kind: "segment", segmentId: id } : undefined
  }
  return undefined
}

/** The segment a membership filter refers to: `segment.<id>`, or `segment` with the id as value. */
export const membershipTarget = (filter: Filter, ref: FieldRef & { kind: "segment" }): string => ref.segmentId ?? String(filter.value)

export const windowMs = (filter: Filter): number => Number(filter.value) * UNITS[filter.unit!]
