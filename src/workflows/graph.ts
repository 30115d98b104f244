/**
 * Workflow graphs, pure: the graph rules (one way out of a step, one per branch for CONDITION and per
 * outcome for WAIT_FOR_EVENT, no cycles, no way out of EXIT, nothing into TRIGGER), and how the engine
 * finds a step's successor. Step configs are checked in stepConfig.ts, CONDITION fields in conditionStep.ts.
 */
import { type Condition, ENGAGEMENT_EVENTS } from "../domain/conditions/types.ts"
import { isPlainObject } from "../domain/customData.ts"
import type { Step, StepType, Transition } from "../domain/workflowSteps.ts"
import { conditionOf } from "./conditionStep.ts"

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

/** The steps with several ways out: the transition field naming each way, its values, and what a message calls one. */
const OUTLETS: Record<
  "CONDITION" | "WAIT_FOR_EVENT",
  { readonly field: "branch" | "waitOutcome"; readonly values: ReadonlyArray<string>; readonly noun: string }
> = {
  CONDITION: { field: "branch", values: ["yes", "no"], noun: "branch" },
  WAIT_FOR_EVENT: { field: "waitOutcome", values: ["EVENT", "TIMEOUT"], noun: "outcome" }
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
  const outlet = from.type === "CONDITION" || from.type === "WAIT_FOR_EVENT" ? OUTLETS[from.type] : undefined
  const value = outlet && input[outlet.field]
  if (outlet && !outlet.values.includes(value ?? "")) {
    const message = `A transition from a ${from.type} step needs ${outlet.field} ${outlet.values.join(" or ")}`
    return [{ field: outlet.field, message, code: "required" }]
  }
  for (const [type, { field }] of Object.entries(OUTLETS)) {
    if (type !== from.type && input[field] !== undefined)
      problems.push({ field, message: `${field} only applies to ${type} steps`, code: "invalid_value" })
  }
  if (outlet && existing.some((transition) => transition[outlet.field] === value)) {
    problems.push({
      field: outlet.field,
      message: `The ${value} ${outlet.noun} of this step already has a transition`,
      code: "duplicate_transition"
    })
  } else if (!outlet && existing.length > 0) {
    problems.push({
      field: "fromStepId",
      message: `A ${from.type} step has one outgoing transition, and this one has it already`,
      code: "duplicate_transition"
    })
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
