/**
 * The workflow interpreter, pure: what a step does and how an input resumes an execution, as
 * decisions over steps decoded by the one step schema (src/domain/workflowSteps.ts). No I/O, no
 * clock: the engine (src/workflows/engine.ts) hands in the time and the contact's facts, performs
 * each decision (claims, mail, contact updates, timers) and writes the results back through the
 * executions repository (src/store/WorkflowExecutions.ts).
 */
import { Result } from "effect"
import { compileCondition, type ContactFacts } from "../domain/conditions/evaluate.ts"
import { conditionReads, type ConditionReads } from "../domain/conditions/validate.ts"
import { normalizeEmail } from "../domain/email.ts"
import { decodeStepDefinition, type StepDefinition } from "../domain/workflowSteps.ts"
import { conditionOf, CONTEXT_DATA_KEY } from "./conditionStep.ts"
import { canonicalEventName, type Choice, type ExecutionStatus, type StepType } from "./graph.ts"
import { DELAY_UNITS } from "./stepConfig.ts"

/** A step of a loaded workflow: its stored type, and its definition decoded (or why it does not decode). */
export interface RunnableStep {
  readonly id: string
  readonly type: StepType
  readonly name: string
  readonly definition: Result.Result<StepDefinition, string>
}

export const runnableStep = (
  step: { readonly id: string; readonly type: StepType; readonly name: string; readonly config: unknown }
): RunnableStep => ({
  id: step.id,
  type: step.type,
  name: step.name,
  definition: decodeStepDefinition(step.type, step.config)
})

/** What running a step means. */
export type StepDecision =
  /** The execution fails on this step. */
  | { readonly _tag: "Fail"; readonly error: string }
  /** Done here (recorded COMPLETED with `output`); go on along `choice`. */
  | { readonly _tag: "Continue"; readonly output: unknown; readonly choice: Choice }
  /** Wait on this step: for `waitEvent` (WAIT_FOR_EVENT), until `dueAt` (a timer), or both. */
  | { readonly _tag: "Wait"; readonly waitEvent: string | null; readonly dueAt: string | null; readonly output: unknown }
  /** Queue the template's mail to the contact, or to a custom address (not the contact). */
  | { readonly _tag: "SendEmail"; readonly templateId: string; readonly customRecipient: string | null }
  /** Record the webhook's intent; the runner performs it after the commit and reports back. */
  | { readonly _tag: "CallWebhook" }
  | { readonly _tag: "UpdateContact"; readonly updates: Readonly<Record<string, unknown>>; readonly subscribed: boolean | undefined }
  | { readonly _tag: "Exit"; readonly reason: string | null }

export interface StepInput {
  /** Milliseconds since the epoch (the service's clock). */
  readonly now: number
  /** The execution's context: trigger event data and what WAIT_FOR_EVENT gathered. */
  readonly context: Readonly<Record<string, unknown>>
  /** The contact's facts, for CONDITION steps (undefined: the contact no longer exists). */
  readonly contact?: ContactFacts | undefined
}

/**
 * What a step reads from the contact's facts (CONDITION): the event names, and those counted in a window
 * with their longest window; undefined when it reads no facts.
 */
export const factsRead = (step: RunnableStep): Pick<ConditionReads, "events" | "windows"> | undefined => {
  const definition = step.definition
  if (definition._tag === "Failure" || definition.success.type !== "CONDITION") return undefined
  return conditionReads(conditionOf(definition.success.config))
}

export const decideStep = (step: RunnableStep, input: StepInput): StepDecision => {
  if (step.definition._tag === "Failure") return { _tag: "Fail", error: `the step's config is not valid: ${step.definition.failure}` }
  const definition = step.definition.success
  switch (definition.type) {
    case "TRIGGER":
      return { _tag: "Fail", error: "a transition leads back into the trigger" }
    case "SEND_EMAIL": {
      const recipient = definition.config.recipient
      return {
        _tag: "SendEmail",
        templateId: definition.config.templateId,
        customRecipient: recipient?.type === "CUSTOM" ? normalizeEmail(recipient.customEmail) : null
      }
    }
    case "DELAY": {
      const dueAt = new Date(input.now + definition.config.amount * DELAY_UNITS[definition.config.unit]).toISOString()
      return { _tag: "Wait", waitEvent: null, dueAt, output: { dueAt } }
    }
    case "WAIT_FOR_EVENT": {
      const eventName = canonicalEventName(definition.config.eventName)
      const timeout = definition.config.timeout
      const dueAt = typeof timeout === "number" ? new Date(input.now + timeout * 1000).toISOString() : null
      return { _tag: "Wait", waitEvent: eventName, dueAt, output: { eventName, timeoutAt: dueAt } }
    }
    case "CONDITION": {
      if (!input.contact) return { _tag: "Fail", error: "the contact no longer exists" }
      const contact = input.contact
      // The context is seen as contact data under its own key (see CONTEXT_DATA_KEY).
      const withContext: ContactFacts = { ...contact, data: { ...contact.data, [CONTEXT_DATA_KEY]: input.context } }
      const branch = compileCondition(conditionOf(definition.config))(withContext, input.now).matches ? "yes" : "no"
      return { _tag: "Continue", output: { branch }, choice: { branch } }
    }
    case "WEBHOOK":
      return { _tag: "CallWebhook" }
    case "UPDATE_CONTACT": {
      const config = definition.config
      const action = config.subscriptionAction ??
        (config.subscribed === undefined ? "none" : config.subscribed ? "subscribe" : "unsubscribe")
      return {
        _tag: "UpdateContact",
        updates: config.updates ?? config.data ?? {},
        subscribed: action === "subscribe" ? true : action === "unsubscribe" ? false : undefined
      }
    }
    case "EXIT":
      return { _tag: "Exit", reason: definition.config.reason ?? null }
  }
}

/** What an input does to an execution it names. */
export type Resumption =
  /** Stale or not for this execution (cancelled, resumed already, a copy): nothing happens. */
  | { readonly _tag: "Ignore" }
  | { readonly _tag: "Fail"; readonly error: string }
  /**
   * The execution goes on from its current step: recorded COMPLETED with `output` first (when set),
   * along `choice`; with `retry`, the step itself runs again (a send held at the billing cap); with
   * `claim`, the step's key is claimed with that output first (a manual start, once).
   */
  | {
    readonly _tag: "Resume"
    readonly output?: unknown
    readonly choice: Choice
    readonly retry?: boolean
    readonly claim?: unknown
    /** Data merged into the execution's context (the awaited event's). */
    readonly context?: Readonly<Record<string, unknown>>
  }

/** An execution as the decisions about inputs see it. */
export interface ExecutionView {
  readonly status: ExecutionStatus
  readonly timerId: string | null
  readonly waitEvent: string | null
}

export type ResumeInput =
  | { readonly kind: "timer"; readonly timerId: string; readonly dueAt: string }
  | { readonly kind: "event"; readonly id: string; readonly name: string; readonly data: Readonly<Record<string, unknown>> }
  | { readonly kind: "webhookDone"; readonly stepId: string; readonly ok: boolean; readonly error?: string | undefined }
  | { readonly kind: "advance" }

const IGNORE: Resumption = { _tag: "Ignore" }
const STEP_GONE: Resumption = { _tag: "Fail", error: "the step it waited on no longer exists" }

/** How `input` resumes an execution standing on `step` (undefined: its step is no longer in the workflow). */
export const decideResume = (execution: ExecutionView, step: RunnableStep | undefined, input: ResumeInput): Resumption => {
  switch (input.kind) {
    case "timer":
      // Stale: cancelled, resumed by its event, or a copy of a timer already handled.
      if (execution.status !== "WAITING" || execution.timerId !== input.timerId) return IGNORE
      if (!step) return STEP_GONE
      if (step.type === "WAIT_FOR_EVENT") return { _tag: "Resume", output: { outcome: "TIMEOUT" }, choice: { waitOutcome: "TIMEOUT" } }
      // Held at the billing cap: the send is tried again.
      if (step.type === "SEND_EMAIL") return { _tag: "Resume", choice: {}, retry: true }
      return { _tag: "Resume", output: { dueAt: input.dueAt }, choice: {} }
    case "event":
      if (execution.status !== "WAITING" || execution.waitEvent !== input.name) return IGNORE
      if (!step) return STEP_GONE
      return { _tag: "Resume", output: { outcome: "EVENT", eventId: input.id }, choice: { waitOutcome: "EVENT" }, context: input.data }
    case "webhookDone":
      // A late outcome for a cancelled execution changes nothing.
      if (execution.status !== "RUNNING" || step?.id !== input.stepId) return IGNORE
      return input.ok ? { _tag: "Resume", choice: {} } : { _tag: "Fail", error: `WEBHOOK step failed: ${input.error ?? "unknown error"}` }
    case "advance":
      if (execution.status !== "RUNNING" || step?.type !== "TRIGGER") return IGNORE
      return { _tag: "Resume", choice: {}, claim: { manual: true } }
  }
}
