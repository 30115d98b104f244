/**
 * The CONDITION step's fields: the execution context read as `context.<path>` (rewritten to contact
 * data for the evaluator), the reference platform's field names accepted on the way in, the list of
 * fields the editor offers, and the condition tree a step's config stands for. Apart from the other
 * step configs because the engine (decider.ts) and the usage endpoints read conditions too.
 */
import { type Condition, type Filter, parseField, VALUE_OPERATORS } from "../domain/conditions/types.ts"
import { isPlainObject } from "../domain/customData.ts"

/**
 * CONDITION steps read the contact like segments do, plus the execution context as `context.<path>`
 * (trigger event data and what WAIT_FOR_EVENT gathered). The evaluator sees the context as contact
 * data under this key (shadowing a stored key of that name for the evaluation only).
 */
export const CONTEXT_DATA_KEY = "$context"

const rewriteContextFields = (tree: Condition): Condition => ({
  logic: tree.logic,
  groups: tree.groups.map((group) => ({
    filters: group.filters.map((filter): Filter =>
      typeof filter.field === "string" && filter.field.startsWith("context.")
        ? { ...filter, field: `data.${CONTEXT_DATA_KEY}.${filter.field.slice(8)}` }
        : filter
    ),
    ...(group.conditions ? { conditions: rewriteContextFields(group.conditions) } : {})
  }))
})

/**
 * The reference platform's names for CONDITION fields, accepted so workflows migrated from it load.
 * With a value operator, `contact.<field>` is the contact's `<field>` (`contact.email`,
 * `contact.subscribed`, `contact.data.plan`) and `event.<key>` the execution context's `<key>` (the
 * trigger event's data: `context.<key>` here). With an event operator `event.<name>` stays the event
 * (and `contact.subscribed` names the emitted event). Stored, and shown back, under this service's names.
 */
export const workflowField = (field: string, operator: unknown): string => {
  if (!(VALUE_OPERATORS as ReadonlyArray<unknown>).includes(operator)) return field
  if (field.startsWith("contact.")) {
    const kind = parseField(field.slice(8))?.kind
    return kind === "email" || kind === "subscribed" || kind === "timestamp" || kind === "data" ? field.slice(8) : field
  }
  return field.startsWith("event.") && field.length > 6 ? `context.${field.slice(6)}` : field
}

/**
 * Every field name a CONDITION step accepts, ours and the reference's (workflowField), typed as the
 * reference lists them (`{ field, type, category }`, by name): contact fields, custom data, and the
 * execution context's keys.
 */
export const conditionFieldList = (
  contactFields: ReadonlyArray<{ readonly field: string; readonly type: string }>,
  contextKeys: ReadonlyArray<string>
) =>
  [
    ...contactFields.flatMap(({ field, type }) => {
      const category = field.startsWith("data.") ? "Custom Data" : "Contact Fields"
      return [{ field, type, category }, { field: `contact.${field}`, type, category }]
    }),
    ...contextKeys.flatMap((key) => [`context.${key}`, `event.${key}`].map((field) => ({ field, type: "string", category: "Event Data" })))
  ].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0))

/** The condition tree of a CONDITION step (a single filter becomes a one-filter tree), ready to evaluate. */
export const conditionOf = (config: Record<string, unknown>): Condition => {
  const tree: Condition = isPlainObject(config.condition)
    ? config.condition as unknown as Condition
    : {
      logic: "AND",
      groups: [{
        filters: [{
          field: config.field,
          operator: config.operator,
          value: config.value,
          ...(config.unit === undefined ? {} : { unit: config.unit }),
          // A count in a window (`triggeredAtLeast … within`), as a tree's filter has it.
          ...(config.within === undefined ? {} : { within: config.within })
        } as Filter]
      }]
    }
  return rewriteContextFields(tree)
}

export const rewrittenForValidation = (config: Record<string, unknown>): unknown => {
  if (isPlainObject(config.condition)) {
    try {
      return rewriteContextFields(config.condition as unknown as Condition)
    } catch {
      return config.condition
    }
  }
  return conditionOf(config)
}

/** The context fields are reported under their own names, not the rewritten ones. */
export const restoreContextPath = (message: string) => message.replaceAll(`data.${CONTEXT_DATA_KEY}.`, "context.")
