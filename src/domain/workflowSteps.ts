/**
 * The configs of workflow steps as one schema: a `Schema.Union` of the step types, each `{ type, config }`.
 * The api's step validation (src/workflows/graph.ts `checkStepConfig`, after its field-by-field checks
 * that name the 422's paths) ends by decoding through it, and the workflow engine decodes stored steps
 * through it before interpreting them (src/workflows/decider.ts): what one accepts the other can run.
 * Pure: imports only effect, so the HTTP contract may use it too.
 */
import { Result, Schema } from "effect"

export const STEP_TYPES = ["TRIGGER", "SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"] as const
export type StepType = (typeof STEP_TYPES)[number]

export const EXECUTION_STATUSES = ["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"] as const
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number]
export const ACTIVE_STATUSES: ReadonlyArray<ExecutionStatus> = ["RUNNING", "WAITING"]

/** A step of a workflow's graph as stored (its config checked by the api, decoded by the engine). */
export interface Step {
  readonly id: string
  readonly type: StepType
  readonly name: string
  readonly config: Record<string, unknown>
}

/** An edge of a workflow's graph: CONDITION steps leave by `branch`, WAIT_FOR_EVENT steps by `waitOutcome`. */
export interface Transition {
  readonly id: string
  readonly fromStepId: string
  readonly toStepId: string
  readonly branch: "yes" | "no" | null
  readonly waitOutcome: "EVENT" | "TIMEOUT" | null
}

export const DELAY_UNIT_NAMES = ["minutes", "hours", "days"] as const
export const WEBHOOK_METHOD_NAMES = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const
export const SUBSCRIPTION_ACTIONS = ["none", "subscribe", "unsubscribe"] as const

const Positive = Schema.Finite.pipe(Schema.check(Schema.isGreaterThan(0)))
const Fields = Schema.Record(Schema.String, Schema.Unknown)

/** The TRIGGER step follows the workflow's trigger; its config is informational. */
export const TriggerConfig = Schema.Struct({ eventName: Schema.optional(Schema.String) })

export const SendEmailConfig = Schema.Struct({
  templateId: Schema.String,
  /** Absent in steps stored before recipients: the contact. */
  recipient: Schema.optional(Schema.Union([
    Schema.Struct({ type: Schema.Literal("CONTACT") }),
    Schema.Struct({ type: Schema.Literal("CUSTOM"), customEmail: Schema.String })
  ]))
})

export const DelayConfig = Schema.Struct({ amount: Positive, unit: Schema.Literals(DELAY_UNIT_NAMES) })

export const WaitForEventConfig = Schema.Struct({
  eventName: Schema.NonEmptyString,
  /** Seconds. */
  timeout: Schema.optional(Schema.NullOr(Positive))
})

/**
 * A condition tree (`condition`), or one filter (`field`, `operator`, `value`, `unit`, `within`); the tree
 * is validated by src/domain/conditions.
 */
export const ConditionConfig = Schema.Struct({
  condition: Schema.optional(Fields),
  field: Schema.optional(Schema.String),
  operator: Schema.optional(Schema.String),
  value: Schema.optional(Schema.Unknown),
  unit: Schema.optional(Schema.Unknown),
  within: Schema.optional(Schema.Unknown)
})

export const WebhookConfig = Schema.Struct({
  url: Schema.String,
  method: Schema.optional(Schema.Literals(WEBHOOK_METHOD_NAMES)),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  body: Schema.optional(Schema.Unknown)
})

/** `{ updates, subscriptionAction }`; `{ data, subscribed }` is how steps stored before normalisation say it. */
export const UpdateContactConfig = Schema.Struct({
  updates: Schema.optional(Fields),
  subscriptionAction: Schema.optional(Schema.Literals(SUBSCRIPTION_ACTIONS)),
  data: Schema.optional(Fields),
  subscribed: Schema.optional(Schema.Boolean)
})

export const ExitConfig = Schema.Struct({ reason: Schema.optional(Schema.NullOr(Schema.String)) })

export const StepDefinition = Schema.Union([
  Schema.Struct({ type: Schema.Literal("TRIGGER"), config: TriggerConfig }),
  Schema.Struct({ type: Schema.Literal("SEND_EMAIL"), config: SendEmailConfig }),
  Schema.Struct({ type: Schema.Literal("DELAY"), config: DelayConfig }),
  Schema.Struct({ type: Schema.Literal("WAIT_FOR_EVENT"), config: WaitForEventConfig }),
  Schema.Struct({ type: Schema.Literal("CONDITION"), config: ConditionConfig }),
  Schema.Struct({ type: Schema.Literal("WEBHOOK"), config: WebhookConfig }),
  Schema.Struct({ type: Schema.Literal("UPDATE_CONTACT"), config: UpdateContactConfig }),
  Schema.Struct({ type: Schema.Literal("EXIT"), config: ExitConfig })
]).annotate({ identifier: "WorkflowStepDefinition" })
export type StepDefinition = typeof StepDefinition.Type

const decode = Schema.decodeUnknownResult(StepDefinition)

/** A step's type and config, decoded; the reason when they do not fit the schema. */
export const decodeStepDefinition = (type: string, config: unknown): Result.Result<StepDefinition, string> =>
  Result.mapError(decode({ type, config }), (error) => error.message)
