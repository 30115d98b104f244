import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  ExecutionActive,
  ExecutionNotActive,
  ReentryNotAllowed,
  TemplateNotFound,
  TransitionExists,
  WorkflowDisabled,
  WorkflowHasActiveExecutions
} from "../../domain/errors.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { pageParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Json, JsonObject, pageFields, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"
import { EXECUTION_STATUSES, STEP_TYPES } from "../../domain/workflowSteps.ts"

const StepType = Schema.Literals(STEP_TYPES)
const Position = Schema.NullOr(Schema.Struct({ x: Schema.Finite, y: Schema.Finite }))

export const WorkflowStep = Schema.Struct({
  id: Schema.String,
  type: StepType,
  name: Schema.String,
  config: Schema.Record(Schema.String, Schema.Unknown),
  position: Position,
  createdAt: Timestamp
}).annotate({ identifier: "WorkflowStep" })

export const WorkflowTransition = Schema.Struct({
  id: Schema.String,
  fromStepId: Schema.String,
  toStepId: Schema.String,
  branch: Schema.NullOr(Schema.Literals(["yes", "no"])),
  waitOutcome: Schema.NullOr(Schema.Literals(["EVENT", "TIMEOUT"])),
  createdAt: Timestamp
}).annotate({ identifier: "WorkflowTransition" })

export const Workflow = Schema.Struct({
  id: Schema.String,
  projectId: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  triggerType: Schema.Literals(["EVENT", "MANUAL"]),
  triggerConfig: Schema.Struct({ eventName: Schema.optional(Schema.String) }),
  enabled: Schema.Boolean,
  allowReentry: Schema.Boolean,
  billingHold: Schema.NullOr(Schema.String).annotate({
    description:
      "Why the workflow's SEND_EMAIL steps wait: the project's monthly workflows limit is reached. Its executions wait on the step (WAITING) and send when the limit is raised or the month turns; null otherwise"
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  steps: Schema.Array(WorkflowStep),
  transitions: Schema.Array(WorkflowTransition)
}).annotate({ identifier: "Workflow" })

const ExecutionStatus = Schema.Literals(EXECUTION_STATUSES)

export const Execution = Schema.Struct({
  id: Schema.String,
  workflowId: Schema.String,
  contactId: Schema.String,
  status: ExecutionStatus,
  currentStepId: Schema.NullOr(Schema.String),
  context: Schema.Record(Schema.String, Schema.Unknown),
  exitReason: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  startedAt: Timestamp,
  updatedAt: Timestamp,
  completedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "WorkflowExecution" })

/** An execution as listed and shown one at a time: with its contact's email, for people to read. */
export const ListedExecution = Schema.Struct({
  ...Execution.fields,
  contactEmail: Schema.NullOr(Schema.String).annotate({ description: "The contact's email; null once the contact is deleted" })
}).annotate({ identifier: "WorkflowExecutionListed" })

const StepExecution = Schema.Struct({
  id: Schema.String,
  stepId: Schema.String,
  stepType: Schema.String,
  status: Schema.Literals(["PENDING", "SCHEDULED", "WAITING", "RUNNING", "COMPLETED", "SKIPPED", "FAILED"]),
  output: Schema.Unknown,
  error: Schema.NullOr(Schema.String),
  attempts: Count,
  startedAt: Timestamp,
  completedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "WorkflowStepExecution" })

const IdParam = { id: Text }
const StepParams = { id: Text, stepId: Text }
const notFound = ErrorDocs.notFound
const conflict = ErrorDocs.conflict
/** A structural edit while executions are RUNNING or WAITING. */
const activeExecutions = declared(WorkflowHasActiveExecutions)
const ExecutionsQuery = queryParameters({
  ...pageParams,
  status: QueryParam.literals(EXECUTION_STATUSES, "Only executions in this status (case-insensitive; another value is a 422)")
})
const SpliceQuery = queryParameters({
  splice: QueryParam.boolean("true: the transitions into the step are reconnected to its successor")
})

const StepConfigDoc =
  "Step configs: SEND_EMAIL { templateId (a template of this project: 404 otherwise), recipient?: { type: CONTACT|CUSTOM, customEmail? } }; DELAY { amount, unit: minutes|hours|days } " +
  "(at most 365 days); WAIT_FOR_EVENT { eventName, timeout? (seconds) }; CONDITION { field, operator, value?, unit?, within? } or { condition: <tree> } " +
  "(fields as in segments, plus context.<path> for the execution context; event operators take event.<name> or the bare name, stored as event.<name>; " +
  "the reference's names are accepted and stored as ours: with a value operator contact.<field> is <field> and event.<key> is context.<key>); WEBHOOK { url, method?, headers?, body? } (Liquid); " +
  "UPDATE_CONTACT { updates?, subscriptionAction?: none|subscribe|unsubscribe } (also { data, subscribed }); EXIT { reason? }."

export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.get("list", "/workflows", { success: Schema.Array(Workflow), error: commonErrors })
      .annotate(OpenApi.Description, "All workflows of the project with their steps and transitions, newest first."),
    HttpApiEndpoint.get("fields", "/workflows/fields", {
      success: Schema.Struct({
        contactFields: Schema.Array(Schema.Struct({ field: Schema.String, type: Schema.String })),
        events: Schema.Array(Schema.Struct({ name: Schema.String, dataKeys: Schema.Array(Schema.String) })),
        contextFields: Schema.Array(Schema.String),
        fields: Schema.Array(Schema.String).annotate({ description: "Every field name typedFields lists" }),
        typedFields: Schema.Array(Schema.Struct({ field: Schema.String, type: Schema.String, category: Schema.String })).annotate({
          description: "Fields in the reference platform's shape, under both names: ours (email, data.<key>, context.<key>) and the " +
            "reference's (contact.email, contact.data.<key>, event.<key> for the trigger event's data), sorted by name"
        }),
        count: Count
      }),
      error: commonErrors
    }).annotate(
      OpenApi.Description,
      "Fields usable in CONDITION filters: contact fields with types, event names with their data keys, the execution context's " +
        "fields; and all of them under both spellings (typedFields), as CONDITION steps accept the reference's names too."
    ),
    HttpApiEndpoint.get("webhookSecret", "/workflows/webhook-secret", {
      success: Schema.Struct({ secret: Schema.String }),
      error: commonErrors
    }).annotate(OpenApi.Description, "The project's Standard Webhooks secret (whsec_…) WEBHOOK steps sign with."),
    HttpApiEndpoint.post("create", "/workflows", {
      payload: Schema.Struct({
        name: Text,
        description: Schema.optional(Schema.NullOr(Text)),
        eventName: Schema.optional(Text),
        allowReentry: Schema.optional(Schema.Boolean)
      }),
      success: Workflow.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors]
    }).annotate(OpenApi.Description, "Always starts with triggerType EVENT, enabled false, and a TRIGGER step to connect onwards."),
    HttpApiEndpoint.get("get", "/workflows/:id", {
      params: IdParam,
      success: Workflow,
      error: [...commonErrors, ...inputErrors, notFound]
    }),
    HttpApiEndpoint.patch("update", "/workflows/:id", {
      params: IdParam,
      payload: Schema.Struct({
        name: Schema.optional(Text),
        description: Schema.optional(Schema.NullOr(Text)),
        triggerType: Schema.optional(Schema.Literals(["EVENT", "MANUAL"])),
        triggerConfig: Schema.optional(Schema.Struct({ eventName: Schema.optional(Text) })),
        enabled: Schema.optional(Schema.Boolean),
        allowReentry: Schema.optional(Schema.Boolean)
      }),
      success: Workflow,
      error: [...commonErrors, ...bodyErrors, notFound]
    }),
    HttpApiEndpoint.delete("delete", "/workflows/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, notFound, activeExecutions, conflict]
    }).annotate(OpenApi.Description, "409 while executions are RUNNING or WAITING: cancel them first."),
    HttpApiEndpoint.post("addStep", "/workflows/:id/steps", {
      params: IdParam,
      payload: Schema.Struct({
        type: Text,
        name: Schema.optional(Text),
        config: Schema.optional(Json),
        position: Schema.optional(Position)
      }),
      success: WorkflowStep.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors, notFound, declared(TemplateNotFound), activeExecutions, conflict]
    }).annotate(OpenApi.Description, StepConfigDoc),
    HttpApiEndpoint.patch("updateStep", "/workflows/:id/steps/:stepId", {
      params: StepParams,
      payload: Schema.Struct({ name: Schema.optional(Text), config: Schema.optional(Json), position: Schema.optional(Position) }),
      success: WorkflowStep,
      error: [...commonErrors, ...bodyErrors, notFound, declared(TemplateNotFound)]
    }).annotate(OpenApi.Description, "Updates a step's name, config (validated as on creation) or position."),
    HttpApiEndpoint.delete("deleteStep", "/workflows/:id/steps/:stepId", {
      params: StepParams,
      query: SpliceQuery.fields,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, notFound, activeExecutions, conflict]
    }).annotate(OpenApi.Description, "With splice=true, transitions into the step are reconnected to its successor.")
      .annotate(OpenApi.Transform, SpliceQuery.document),
    HttpApiEndpoint.post("addTransition", "/workflows/:id/transitions", {
      params: IdParam,
      payload: Schema.Struct({
        fromStepId: Text,
        toStepId: Text,
        branch: Schema.optional(Schema.Literals(["yes", "no"])),
        waitOutcome: Schema.optional(Schema.Literals(["EVENT", "TIMEOUT"]))
      }),
      success: WorkflowTransition.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors, notFound, activeExecutions, declared(TransitionExists), conflict]
    }).annotate(OpenApi.Description, "CONDITION steps need branch yes|no, WAIT_FOR_EVENT steps waitOutcome EVENT|TIMEOUT; no cycles."),
    HttpApiEndpoint.delete("deleteTransition", "/workflows/:id/transitions/:transitionId", {
      params: { id: Text, transitionId: Text },
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, notFound, activeExecutions, conflict]
    }),
    HttpApiEndpoint.post("startExecution", "/workflows/:id/executions", {
      params: IdParam,
      payload: Schema.Struct({ contactId: Text, context: Schema.optional(JsonObject) }),
      success: Execution.pipe(HttpApiSchema.status(201)),
      error: [
        ...commonErrors,
        ...bodyErrors,
        notFound,
        declared(WorkflowDisabled),
        declared(ExecutionActive),
        declared(ReentryNotAllowed),
        conflict
      ]
    }).annotate(
      OpenApi.Description,
      "Records an execution (RUNNING); the project's worker advances it. 400 WORKFLOW_DISABLED unless the workflow is enabled " +
        "(as the reference answers); 409 when one is active, or one ran and allowReentry is false."
    ),
    HttpApiEndpoint.get("listExecutions", "/workflows/:id/executions", {
      params: IdParam,
      query: ExecutionsQuery.fields,
      success: Schema.Struct(pageFields(ListedExecution)),
      error: [...commonErrors, ...inputErrors, notFound]
    }).annotate(OpenApi.Transform, ExecutionsQuery.document),
    HttpApiEndpoint.post("cancelAll", "/workflows/:id/executions/cancel-all", {
      params: IdParam,
      success: Schema.Struct({ cancelled: Count }),
      error: [...commonErrors, ...inputErrors, notFound]
    }),
    HttpApiEndpoint.get("getExecution", "/workflows/:id/executions/:executionId", {
      params: { id: Text, executionId: Text },
      success: Schema.Struct({ ...ListedExecution.fields, steps: Schema.Array(StepExecution) }),
      error: [...commonErrors, ...inputErrors, notFound]
    }).annotate(OpenApi.Description, "One execution with its step history."),
    HttpApiEndpoint.delete("cancelExecution", "/workflows/:id/executions/:executionId", {
      params: { id: Text, executionId: Text },
      success: Execution,
      error: [...commonErrors, ...inputErrors, notFound, declared(ExecutionNotActive), conflict]
    }).annotate(OpenApi.Description, "Cancels a RUNNING or WAITING execution (409 otherwise).")
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(
    OpenApi.annotations({ title: "Workflows", description: "Workflows, their steps, transitions and executions (secret key)" })
  )
{}
