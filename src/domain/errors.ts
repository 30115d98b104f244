/**
 * Domain failures an API answer can name: each a `Schema.TaggedError` carrying its HTTP status and the
 * envelope's `code` (as statics, so the contract can declare the class on the endpoints that answer it
 * and /openapi.json lists it), and the envelope's own fields (message, field errors, details, a
 * suggestion). Repositories and services fail with these instead of returning sentinel values; the
 * contract (src/http/api/errors.ts, `declared`) turns one into the spec's error envelope with the
 * request id, so no handler renders a body.
 */
import { Schema } from "effect"

/** One invalid field of a request, as the envelope's `errors[]` lists it. */
export const FieldErrorSchema = Schema.Struct({
  field: Schema.String,
  message: Schema.String,
  code: Schema.String,
  received: Schema.optionalKey(Schema.Unknown)
}).annotate({ identifier: "FieldError" })

export type FieldError = typeof FieldErrorSchema.Type

/** What every domain error holds: the envelope's fields other than its code and status. */
export const domainErrorFields = {
  message: Schema.String,
  errors: Schema.optionalKey(Schema.Array(FieldErrorSchema)),
  details: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  suggestion: Schema.optionalKey(Schema.String)
}

/** The class side of a domain error: its schema, with the status and code the envelope carries. */
export interface DomainErrorClass<Tag extends string = string> {
  readonly status: number
  readonly code: string
  readonly tag: Tag
}

/** The list this cursor-paginated endpoint returned no such cursor (a forged one, or from another sort). */
export class InvalidCursor extends Schema.TaggedError<InvalidCursor>()("InvalidCursor", domainErrorFields) {
  static readonly status = 400
  static readonly code = "INVALID_CURSOR"
  static readonly tag = "InvalidCursor"
  static readonly of = (message = "cursor is not a cursor returned by this list") => new InvalidCursor({ message })
}

/** Another contact of the project already has this email. */
export class DuplicateEmail extends Schema.TaggedError<DuplicateEmail>()("DuplicateEmail", domainErrorFields) {
  static readonly status = 409
  static readonly code = "CONTACT_EXISTS"
  static readonly tag = "DuplicateEmail"
  static readonly of = () => new DuplicateEmail({ message: "Another contact in this project already has this email" })
}

/** The project has added this sending domain already. */
export class DomainExists extends Schema.TaggedError<DomainExists>()("DomainExists", domainErrorFields) {
  static readonly status = 409
  static readonly code = "DOMAIN_EXISTS"
  static readonly tag = "DomainExists"
  static readonly of = (domain: string) =>
    new DomainExists({ message: `The domain ${domain} is already added to this project`, details: { domain } })
}

/** A structural edit (steps, transitions, deletion) of a workflow while executions of it are RUNNING or WAITING. */
export class WorkflowHasActiveExecutions
  extends Schema.TaggedError<WorkflowHasActiveExecutions>()("WorkflowHasActiveExecutions", domainErrorFields)
{
  static readonly status = 409
  static readonly code = "WORKFLOW_HAS_ACTIVE_EXECUTIONS"
  static readonly tag = "WorkflowHasActiveExecutions"
  static readonly of = () =>
    new WorkflowHasActiveExecutions({
      message: "The workflow has running or waiting executions: cancel them (or let them complete) first"
    })
}

/** A manual start for a contact that already has a RUNNING or WAITING execution of the workflow. */
export class ExecutionActive extends Schema.TaggedError<ExecutionActive>()("ExecutionActive", domainErrorFields) {
  static readonly status = 409
  static readonly code = "EXECUTION_ACTIVE"
  static readonly tag = "ExecutionActive"
  static readonly of = () => new ExecutionActive({ message: "The contact already has a running or waiting execution of this workflow" })
}

/** A manual start for a contact who went through the workflow once, when allowReentry is false. */
export class ReentryNotAllowed extends Schema.TaggedError<ReentryNotAllowed>()("ReentryNotAllowed", domainErrorFields) {
  static readonly status = 409
  static readonly code = "REENTRY_NOT_ALLOWED"
  static readonly tag = "ReentryNotAllowed"
  static readonly of = () => new ReentryNotAllowed({ message: "The contact already went through this workflow and allowReentry is false" })
}

/** A cancellation of an execution that is no longer RUNNING or WAITING. */
export class ExecutionNotActive extends Schema.TaggedError<ExecutionNotActive>()("ExecutionNotActive", domainErrorFields) {
  static readonly status = 409
  static readonly code = "EXECUTION_NOT_ACTIVE"
  static readonly tag = "ExecutionNotActive"
  static readonly of = () => new ExecutionNotActive({ message: "Only RUNNING or WAITING executions can be cancelled" })
}

/** The fields of a 422 naming one invalid field, as the API's validation answers carry them. */
const invalidField = (field: string, message: string, code: string) => ({
  message: "Request validation failed",
  errors: [{ field, message, code }],
  suggestion: "Check the fields listed in errors and try again."
})

/** A transition out of a step the way (branch, wait outcome) another transition already takes, added concurrently. */
export class TransitionExists extends Schema.TaggedError<TransitionExists>()("TransitionExists", domainErrorFields) {
  static readonly status = 422
  static readonly code = "VALIDATION_ERROR"
  static readonly tag = "TransitionExists"
  static readonly of = () =>
    new TransitionExists(invalidField("fromStepId", "This way out of the step already has a transition", "duplicate_transition"))
}

/**
 * A dead letter whose payload is not a message that can be published again (not this project's, not
 * storable, or neither an IN message nor an OUT event). Answered as the 422 naming the `id` field, the
 * body the API has always given it.
 */
export class DeadLetterNotReplayable extends Schema.TaggedError<DeadLetterNotReplayable>()("DeadLetterNotReplayable", domainErrorFields) {
  static readonly status = 422
  static readonly code = "VALIDATION_ERROR"
  static readonly tag = "DeadLetterNotReplayable"
  static readonly of = () =>
    new DeadLetterNotReplayable(
      invalidField("id", "This dead letter's payload is not a message that can be published again", "not_replayable")
    )
}

/** What a campaign in `status` cannot be (edited, cancelled, ...), in the envelope's message. */
const campaignStateFields = (status: string, action: string) => ({
  message: `A ${status} campaign cannot be ${action}`,
  details: { status }
})

/** A campaign change its status does not allow (editing a SENT campaign, deleting a SENDING one, ...). */
export class InvalidCampaignState extends Schema.TaggedError<InvalidCampaignState>()("InvalidCampaignState", domainErrorFields) {
  static readonly status = 409
  static readonly code = "INVALID_CAMPAIGN_STATE"
  static readonly tag = "InvalidCampaignState"
  static readonly of = (status: string, action: string) => new InvalidCampaignState(campaignStateFields(status, action))
}

/** POST /campaigns/:id/send for a campaign that is not DRAFT or SCHEDULED: a 400, as the reference answers it. */
export class CampaignNotSendable extends Schema.TaggedError<CampaignNotSendable>()("CampaignNotSendable", domainErrorFields) {
  static readonly status = 400
  static readonly code = "INVALID_CAMPAIGN_STATE"
  static readonly tag = "CampaignNotSendable"
  static readonly of = (status: string) => new CampaignNotSendable(campaignStateFields(status, "sent"))
}

/** A template another request needs (a SEND_EMAIL step's) is not one of the project's: missing or another project's, alike. */
export class TemplateNotFound extends Schema.TaggedError<TemplateNotFound>()("TemplateNotFound", domainErrorFields) {
  static readonly status = 404
  static readonly code = "NOT_FOUND"
  static readonly tag = "TemplateNotFound"
  static readonly of = () => new TemplateNotFound({ message: "Template not found" })
}

/** Deleting a template that workflow SEND_EMAIL steps send: refused, naming them (as the reference refuses it). */
export class TemplateInUse extends Schema.TaggedError<TemplateInUse>()("TemplateInUse", domainErrorFields) {
  static readonly status = 409
  static readonly code = "TEMPLATE_IN_USE"
  static readonly tag = "TemplateInUse"
  static readonly of = (workflows: ReadonlyArray<{ readonly id: string; readonly name: string; readonly stepId: string }>) => {
    const names = [...new Set(workflows.map((workflow) => workflow.name))]
    return new TemplateInUse({
      message: `The template is used by workflow steps (${names.join(", ")}): remove it from them first`,
      details: { workflows: workflows.map(({ id, name, stepId }) => ({ id, name, stepId })) }
    })
  }
}

/** POST /workflows/:id/executions for a disabled workflow: a 400, as the reference answers it. */
export class WorkflowDisabled extends Schema.TaggedError<WorkflowDisabled>()("WorkflowDisabled", domainErrorFields) {
  static readonly status = 400
  static readonly code = "WORKFLOW_DISABLED"
  static readonly tag = "WorkflowDisabled"
  static readonly of = () =>
    new WorkflowDisabled({ message: "The workflow is not enabled: enable it (PATCH /workflows/:id { enabled: true }) to start executions" })
}

/** Sending (or scheduling) a campaign no contact would receive: a 400, as the reference answers it. */
export class CampaignAudienceEmpty extends Schema.TaggedError<CampaignAudienceEmpty>()("CampaignAudienceEmpty", domainErrorFields) {
  static readonly status = 400
  static readonly code = "EMPTY_AUDIENCE"
  static readonly tag = "CampaignAudienceEmpty"
  static readonly of = () =>
    new CampaignAudienceEmpty({
      message: "Campaign has no recipients: no contact of its audience can receive it",
      suggestion: "Check the audience (segment or filter), and that its contacts are subscribed (marketing) and not suppressed."
    })
}

/** Every domain error the API can answer, for code that maps any of them (the web app's failure view). */
export const DomainErrors = [
  InvalidCursor,
  DuplicateEmail,
  DomainExists,
  WorkflowHasActiveExecutions,
  ExecutionActive,
  ReentryNotAllowed,
  ExecutionNotActive,
  TransitionExists,
  DeadLetterNotReplayable,
  InvalidCampaignState,
  CampaignNotSendable,
  TemplateNotFound,
  TemplateInUse,
  WorkflowDisabled,
  CampaignAudienceEmpty
] as const

export type DomainError = InstanceType<(typeof DomainErrors)[number]>

/** The status and code of a domain error, read from its class. */
export const domainErrorInfo = (error: unknown): (DomainErrorClass & { readonly error: DomainError }) | undefined => {
  const found = DomainErrors.find((errorClass) => error instanceof errorClass)
  return found ? { status: found.status, code: found.code, tag: found.tag, error: error as DomainError } : undefined
}
