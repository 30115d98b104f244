/**
 * Workflow graphs, pure: step types and their configs (validated with field paths for 422s), the graph
 * rules (one way out of a step, one per branch for CONDITION and per outcome for WAIT_FOR_EVENT, no
 * cycles, no way out of EXIT, nothing into TRIGGER), and how the engine finds a step's successor.
 */
import { canonicalCondition, canonicalField, renameFields } from "../domain/conditions/canonical.ts"
import { type Condition, ENGAGEMENT_EVENTS, type Filter, parseField, VALUE_OPERATORS } from "../domain/conditions/types.ts"
import { validateCondition } from "../domain/conditions/validate.ts"
import { dataPayloadProblems, isPlainObject } from "../domain/customData.ts"
import { isValidEmail } from "../domain/email.ts"
import { isUuid } from "../domain/ids.ts"
import {
  decodeStepDefinition,
  STEP_TYPES,
  type Step,
  type StepType,
  type Transition,
  WEBHOOK_METHOD_NAMES
} from "../domain/workflowSteps.ts"
import { templateSyntaxProblem } from "../mail/render.ts"

/** The stored shapes (step types, statuses, steps, transitions) live in src/domain/workflowSteps.ts, for the store too. */
export {
  ACTIVE_STATUSES,
  EXECUTION_STATUSES,
  type ExecutionStatus,
  STEP_TYPES,
  type Step,
  type StepType,
  type Transition
} from "../domain/workflowSteps.ts"
/** What POST /workflows/:id/steps accepts (the TRIGGER step comes with the workflow). */
export const ADDABLE_STEP_TYPES = STEP_TYPES.filter((type) => type !== "TRIGGER")

export const WEBHOOK_METHODS = WEBHOOK_METHOD_NAMES
export const DELAY_UNITS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const
export const MAX_DELAY_MS = 365 * 86_400_000

/** Which way out of a step an execution takes (CONDITION branches, WAIT_FOR_EVENT outcomes). */
export interface Choice {
  readonly branch?: "yes" | "no"
  readonly waitOutcome?: "EVENT" | "TIMEOUT"
}

export interface ConfigProblem {
  readonly field: string
  readonly message: string
  readonly code: string
}

const liquidProblem = (field: string, source: string, kind: "html" | "text"): ConfigProblem | undefined => {
  const message = templateSyntaxProblem(source, kind)
  return message === undefined ? undefined : { field, message, code: "invalid_template" }
}

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

const rewrittenForValidation = (config: Record<string, unknown>): unknown => {
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
const restoreContextPath = (message: string) => message.replaceAll(`data.${CONTEXT_DATA_KEY}.`, "context.")

const positiveNumber = (value: unknown) => typeof value === "number" && Number.isFinite(value) && value > 0

/**
 * Validates (and normalises) a step's config; `field` paths are under `config`. The field checks name
 * each problem; a config that passes them is then decoded through the step schema the engine runs on
 * (src/domain/workflowSteps.ts), so nothing is stored that the engine cannot interpret.
 */
export const checkStepConfig = (type: StepType, input: unknown): { config: Record<string, unknown>; problems: Array<ConfigProblem> } => {
  const checked = checkStepFields(type, input)
  if (checked.problems.length > 0) return checked
  const decoded = decodeStepDefinition(type, checked.config)
  return decoded._tag === "Failure"
    ? { config: checked.config, problems: [{ field: "config", message: decoded.failure, code: "invalid_value" }] }
    : checked
}

const checkStepFields = (type: StepType, input: unknown): { config: Record<string, unknown>; problems: Array<ConfigProblem> } => {
  const problems: Array<ConfigProblem> = []
  const problem = (field: string, message: string, code = "invalid_value") => problems.push({ field: `config.${field}`, message, code })
  if (input !== undefined && !isPlainObject(input)) {
    return { config: {}, problems: [{ field: "config", message: "config must be an object", code: "invalid_type" }] }
  }
  const config: Record<string, unknown> = { ...(input as Record<string, unknown> | undefined) }
  switch (type) {
    case "TRIGGER":
      break
    case "SEND_EMAIL": {
      if (typeof config.templateId !== "string" || !isUuid(config.templateId))
        problem("templateId", "templateId is required (a template id)", "required")
      const recipient = config.recipient === undefined ? { type: "CONTACT" } : config.recipient
      if (!isPlainObject(recipient) || (recipient.type !== "CONTACT" && recipient.type !== "CUSTOM")) {
        problem("recipient.type", "recipient.type must be CONTACT or CUSTOM")
      } else if (
        recipient.type === "CUSTOM" && (typeof recipient.customEmail !== "string" || !isValidEmail(recipient.customEmail.trim()))
      ) {
        problem("recipient.customEmail", "A CUSTOM recipient needs a valid customEmail", "invalid_string")
      }
      config.recipient = recipient
      break
    }
    case "DELAY": {
      const unit = config.unit
      if (typeof unit !== "string" || !(unit in DELAY_UNITS)) problem("unit", "unit must be minutes, hours or days")
      if (!positiveNumber(config.amount)) problem("amount", "amount must be a positive number")
      else if (
        typeof unit === "string" && unit in DELAY_UNITS &&
        (config.amount as number) * DELAY_UNITS[unit as keyof typeof DELAY_UNITS] > MAX_DELAY_MS
      ) {
        problem("amount", "A delay is at most 365 days", "too_big")
      }
      break
    }
    case "WAIT_FOR_EVENT":
      if (typeof config.eventName !== "string" || config.eventName.trim() === "") problem("eventName", "eventName is required", "required")
      if (config.timeout !== undefined && config.timeout !== null) {
        if (!positiveNumber(config.timeout)) problem("timeout", "timeout is a positive number of seconds")
        else if ((config.timeout as number) * 1000 > MAX_DELAY_MS) problem("timeout", "A timeout is at most 365 days", "too_big")
      }
      break
    case "CONDITION": {
      if (!isPlainObject(config.condition) && config.field === undefined) {
        problem("condition", "A CONDITION step needs a condition tree (condition) or a filter (field, operator, value)", "required")
        break
      }
      // Bare event names are stored as event.<name>, as segments and audiences store them; the reference's
      // field names (workflowField) under ours.
      if (isPlainObject(config.condition)) config.condition = renameFields(canonicalCondition(config.condition), workflowField)
      else {
        const field = canonicalField(config.field, config.operator)
        config.field = typeof field === "string" ? workflowField(field, config.operator) : field
      }
      const found = validateCondition(rewrittenForValidation(config), isPlainObject(config.condition) ? "config.condition" : "config")
      for (const found1 of found) {
        // A one-filter config is validated as a tree; report the config's own paths.
        const field = isPlainObject(config.condition) ? found1.path : found1.path.replace(/^config\.groups\[0\]\.filters\[0\]/, "config")
        problems.push({ field, message: restoreContextPath(found1.message), code: found1.code })
      }
      break
    }
    case "WEBHOOK": {
      const method = config.method === undefined ? "POST" : config.method
      if (typeof method !== "string" || !(WEBHOOK_METHODS as ReadonlyArray<string>).includes(method.toUpperCase())) {
        problem("method", `method must be one of ${WEBHOOK_METHODS.join(", ")}`)
      } else config.method = method.toUpperCase()
      if (typeof config.url !== "string" || !/^https?:\/\//i.test(config.url.trim())) {
        problem("url", "url must be an http(s) URL", typeof config.url === "string" ? "invalid_string" : "required")
      } else {
        const urlProblem = liquidProblem("config.url", config.url, "text")
        if (urlProblem) problems.push(urlProblem)
        else if (!config.url.includes("{{")) {
          try {
            new URL(config.url)
          } catch {
            problem("url", "url is not a valid URL", "invalid_string")
          }
        }
      }
      if (config.headers !== undefined) {
        if (!isPlainObject(config.headers)) problem("headers", "headers must be an object of strings", "invalid_type")
        else {
          for (const [name, value] of Object.entries(config.headers)) {
            if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) problem(`headers.${name}`, "Invalid header name")
            else if (typeof value !== "string" || /[\r\n\0]/.test(value))
              problem(`headers.${name}`, "Header values are strings without CR, LF or NUL")
            else {
              const found = liquidProblem(`config.headers.${name}`, value, "text")
              if (found) problems.push(found)
            }
          }
        }
      }
      if (config.body !== undefined && config.body !== null) {
        const source = typeof config.body === "string" ? config.body : JSON.stringify(config.body)
        if (source === undefined) problem("body", "body must be a string or JSON", "invalid_type")
        else {
          const found = liquidProblem("config.body", source, "text")
          if (found) problems.push(found)
        }
      }
      break
    }
    case "UPDATE_CONTACT": {
      // api-shapes: { updates, subscriptionAction }; the issue's { data, subscribed } is accepted too.
      const updates = config.updates ?? config.data
      if (updates !== undefined && !isPlainObject(updates)) problem("updates", "updates must be an object of custom fields", "invalid_type")
      else if (updates !== undefined) {
        for (const [field, message] of dataPayloadProblems(updates))
          problems.push({ field: `config.updates${field === "data" ? "" : `.${field}`}`, message, code: "too_big" })
      }
      let action = config.subscriptionAction
      if (action === undefined && typeof config.subscribed === "boolean") action = config.subscribed ? "subscribe" : "unsubscribe"
      if (action !== undefined && action !== "none" && action !== "subscribe" && action !== "unsubscribe") {
        problem("subscriptionAction", "subscriptionAction must be none, subscribe or unsubscribe")
      }
      const normalized: Record<string, unknown> = { updates: updates ?? {}, subscriptionAction: action ?? "none" }
      return { config: normalized, problems }
    }
    case "EXIT":
      if (config.reason !== undefined && config.reason !== null && typeof config.reason !== "string")
        problem("reason", "reason must be a string", "invalid_type")
      break
  }
  return { config, problems }
}

/** The workflow's steps and transitions, indexed (the engine's steps carry their decoded definitions). */
export interface Graph<S extends GraphStep = Step> {
  readonly steps: ReadonlyMap<string, S>
  readonly outgoing: ReadonlyMap<string, ReadonlyArray<Transition>>
  readonly trigger: S | undefined
}

export interface GraphStep {
  readonly id: string
  readonly type: StepType
}

export const makeGraph = <S extends GraphStep>(steps: ReadonlyArray<S>, transitions: ReadonlyArray<Transition>): Graph<S> => {
  const outgoing = new Map<string, Array<Transition>>()
  for (const transition of transitions) {
    const list = outgoing.get(transition.fromStepId) ?? []
    list.push(transition)
    outgoing.set(transition.fromStepId, list)
  }
  return { steps: new Map(steps.map((step) => [step.id, step])), outgoing, trigger: steps.find((step) => step.type === "TRIGGER") }
}

/**
 * The name events are recorded under: engagement events accept both spellings, as conditions do
 * (`email.opened` is `email.open`, `email.delivered` is `email.delivery`, …).
 */
export const canonicalEventName = (name: string): string => name.startsWith("email.") ? (ENGAGEMENT_EVENTS[name.slice(6)] ?? name) : name

/** The step after `stepId` (along `branch` / `waitOutcome` where the step has several ways out). */
export const nextStep = <S extends GraphStep>(graph: Graph<S>, stepId: string, choice: Choice = {}): S | undefined => {
  const transitions = graph.outgoing.get(stepId) ?? []
  const transition = transitions.find((candidate) =>
    (choice.branch === undefined || candidate.branch === choice.branch) &&
    (choice.waitOutcome === undefined || candidate.waitOutcome === choice.waitOutcome)
  )
  return transition ? graph.steps.get(transition.toStepId) : undefined
}

/** Is `target` reachable from `from` along transitions? */
const reaches = (graph: Graph<GraphStep>, from: string, target: string): boolean => {
  const seen = new Set<string>()
  const stack = [from]
  while (stack.length > 0) {
    const id = stack.pop()!
    if (id === target) return true
    if (seen.has(id)) continue
    seen.add(id)
    for (const transition of graph.outgoing.get(id) ?? []) stack.push(transition.toStepId)
  }
  return false
}

/** Problems with adding a transition to the graph (field paths of the request body). */
export const checkTransition = (
  graph: Graph,
  input: {
    readonly fromStepId: string
    readonly toStepId: string
    readonly branch?: string | undefined
    readonly waitOutcome?: string | undefined
  }
): Array<ConfigProblem> => {
  const from = graph.steps.get(input.fromStepId)
  const to = graph.steps.get(input.toStepId)
  const problems: Array<ConfigProblem> = []
  if (!from) problems.push({ field: "fromStepId", message: "fromStepId is not a step of this workflow", code: "unknown_step" })
  if (!to) problems.push({ field: "toStepId", message: "toStepId is not a step of this workflow", code: "unknown_step" })
  if (!from || !to) return problems
  if (from.id === to.id) return [{ field: "toStepId", message: "A step cannot lead to itself", code: "cycle" }]
  if (to.type === "TRIGGER") return [{ field: "toStepId", message: "Nothing can lead into the TRIGGER step", code: "invalid_target" }]
  if (from.type === "EXIT")
    return [{ field: "fromStepId", message: "An EXIT step ends the execution: it has no way out", code: "invalid_source" }]
  const existing = graph.outgoing.get(from.id) ?? []
  if (from.type === "CONDITION") {
    if (input.branch !== "yes" && input.branch !== "no") {
      return [{ field: "branch", message: "A transition from a CONDITION step needs branch yes or no", code: "required" }]
    }
    if (input.waitOutcome !== undefined)
      problems.push({ field: "waitOutcome", message: "waitOutcome only applies to WAIT_FOR_EVENT steps", code: "invalid_value" })
    if (existing.some((transition) => transition.branch === input.branch)) {
      problems.push({
        field: "branch",
        message: `The ${input.branch} branch of this step already has a transition`,
        code: "duplicate_transition"
      })
    }
  } else if (from.type === "WAIT_FOR_EVENT") {
    if (input.waitOutcome !== "EVENT" && input.waitOutcome !== "TIMEOUT") {
      return [{
        field: "waitOutcome",
        message: "A transition from a WAIT_FOR_EVENT step needs waitOutcome EVENT or TIMEOUT",
        code: "required"
      }]
    }
    if (input.branch !== undefined)
      problems.push({ field: "branch", message: "branch only applies to CONDITION steps", code: "invalid_value" })
    if (existing.some((transition) => transition.waitOutcome === input.waitOutcome)) {
      problems.push({
        field: "waitOutcome",
        message: `The ${input.waitOutcome} outcome of this step already has a transition`,
        code: "duplicate_transition"
      })
    }
  } else {
    if (input.branch !== undefined)
      problems.push({ field: "branch", message: "branch only applies to CONDITION steps", code: "invalid_value" })
    if (input.waitOutcome !== undefined)
      problems.push({ field: "waitOutcome", message: "waitOutcome only applies to WAIT_FOR_EVENT steps", code: "invalid_value" })
    if (existing.length > 0) {
      problems.push({
        field: "fromStepId",
        message: `A ${from.type} step has one outgoing transition, and this one has it already`,
        code: "duplicate_transition"
      })
    }
  }
  if (problems.length === 0 && reaches(graph, to.id, from.id)) {
    problems.push({ field: "toStepId", message: "This transition would make a cycle", code: "cycle" })
  }
  return problems
}

/**
 * Splicing a step out: each transition into it is redirected to the step's single successor. A step
 * with several ways out (CONDITION, WAIT_FOR_EVENT with both outcomes) cannot be spliced.
 */
export const spliceTarget = (graph: Graph, stepId: string): { readonly target: string | undefined } | { readonly problem: string } => {
  const out = graph.outgoing.get(stepId) ?? []
  if (out.length > 1) return { problem: "This step has several ways out; delete it without splice or remove its extra transitions first" }
  return { target: out[0]?.toStepId }
}

/** The template ids, event names and fields a workflow refers to (for the usage endpoints). */
export const stepReferences = (step: Step) => {
  const events = new Set<string>()
  const fields = new Set<string>()
  let templateId: string | undefined
  if (step.type === "TRIGGER" || step.type === "WAIT_FOR_EVENT") {
    if (typeof step.config.eventName === "string") events.add(step.config.eventName)
  }
  if (step.type === "SEND_EMAIL" && typeof step.config.templateId === "string") templateId = step.config.templateId
  if (step.type === "CONDITION") {
    const visit = (tree: Condition) => {
      for (const group of tree.groups ?? []) {
        for (const filter of group.filters ?? []) {
          if (typeof filter.field !== "string") continue
          if (filter.field.startsWith("event.")) events.add(filter.field.slice(6))
          else fields.add(filter.field)
        }
        if (group.conditions) visit(group.conditions)
      }
    }
    try {
      visit(isPlainObject(step.config.condition) ? step.config.condition as unknown as Condition : conditionOf(step.config))
    } catch {
      // a malformed stored config refers to nothing
    }
  }
  if (step.type === "UPDATE_CONTACT" && isPlainObject(step.config.updates)) {
    for (const key of Object.keys(step.config.updates)) fields.add(`data.${key}`)
  }
  return { templateId, events, fields }
}
