/**
 * Event filters are written two ways: `event.<name>` (ours), or the bare event name with an event
 * operator, as the reference platform documents them (`{ field: "purchase", operator: "triggeredWithin" }`:
 * "event operators take an event name instead"). Both are accepted wherever conditions are (segments,
 * campaign audiences, workflow CONDITION steps); `event.<name>` is the one form stored and shown back.
 *
 * With an event operator, a field that does not already name an event (`event.<name>`, or an engagement
 * field such as `email.opened`) is the event's name: `purchase`, `contact.subscribed`,
 * `segment.pro-users.entry` and `email.received` all become `event.<field>`.
 */
import { EVENT_OPERATORS, parseField } from "./types.ts"

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const isEventOperator = (operator: unknown): boolean =>
  typeof operator === "string" && (EVENT_OPERATORS as ReadonlyArray<string>).includes(operator)

/** The stored form of a filter's field. */
export const canonicalField = (field: unknown, operator: unknown): unknown =>
  typeof field === "string" && field !== "" && isEventOperator(operator) && parseField(field)?.kind !== "event"
    ? `event.${field}`
    : field

/**
 * The tree with `field` of every filter that has a string one replaced by `rename(field, operator)`;
 * anything malformed is left as it is, for validation to judge (so problems keep their paths).
 */
export const renameFields = (input: unknown, rename: (field: string, operator: unknown) => string): unknown => {
  if (!isObject(input) || !Array.isArray(input.groups)) return input
  return {
    ...input,
    groups: input.groups.map((group: unknown) => {
      if (!isObject(group)) return group
      return {
        ...group,
        ...(Array.isArray(group.filters)
          ? {
            filters: group.filters.map((filter: unknown) =>
              isObject(filter) && typeof filter.field === "string" ? { ...filter, field: rename(filter.field, filter.operator) } : filter
            )
          }
          : {}),
        ...(group.conditions === undefined ? {} : { conditions: renameFields(group.conditions, rename) })
      }
    })
  }
}

/** The tree with every bare event name written `event.<name>`. */
export const canonicalCondition = (input: unknown): unknown =>
  renameFields(input, (field, operator) => canonicalField(field, operator) as string)
