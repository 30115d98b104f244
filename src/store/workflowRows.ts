/**
 * The rows of workflows, their steps and transitions, and their executions, as both repositories select
 * them (store/Workflows.ts for the api, store/WorkflowExecutions.ts for the engine): the columns by name
 * and the schema each row is decoded with, so a row that does not fit is a PersistenceError.
 */
import { ContactId, ExecutionId, ProjectId, WorkflowId, WorkflowStepId } from "../domain/identifiers.ts"
import { Schema } from "effect"
import { EXECUTION_STATUSES, STEP_TYPES } from "../domain/workflowSteps.ts"

/** A `jsonb` object column (the driver answers it parsed). */
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export const WORKFLOW_COLUMNS =
  "id, project_id, name, description, trigger_type, trigger_config, enabled, allow_reentry, billing_hold, created_at, updated_at"
export const STEP_COLUMNS = "id, workflow_id, type, name, config, position, created_at"
export const TRANSITION_COLUMNS = "id, workflow_id, from_step_id, to_step_id, branch, wait_outcome, created_at"
export const EXECUTION_COLUMNS =
  "id, workflow_id, contact_id, status, current_step_id, context, wait_event, timer_id, exit_reason, error, started_at, updated_at, finished_at"

export const WorkflowRow = Schema.Struct({
  id: WorkflowId,
  project_id: ProjectId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  trigger_type: Schema.Literals(["EVENT", "MANUAL"]),
  trigger_config: JsonObject,
  enabled: Schema.Boolean,
  allow_reentry: Schema.Boolean,
  billing_hold: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WorkflowRow = typeof WorkflowRow.Type

export const StepRow = Schema.Struct({
  id: WorkflowStepId,
  workflow_id: WorkflowId,
  type: Schema.Literals(STEP_TYPES),
  name: Schema.String,
  config: JsonObject,
  position: Schema.NullOr(Schema.Struct({ x: Schema.Number, y: Schema.Number })),
  created_at: Schema.Date
})
export type StepRow = typeof StepRow.Type

export const TransitionRow = Schema.Struct({
  id: Schema.String,
  workflow_id: WorkflowId,
  from_step_id: WorkflowStepId,
  to_step_id: WorkflowStepId,
  branch: Schema.NullOr(Schema.Literals(["yes", "no"])),
  wait_outcome: Schema.NullOr(Schema.Literals(["EVENT", "TIMEOUT"])),
  created_at: Schema.Date
})
export type TransitionRow = typeof TransitionRow.Type

export const ExecutionRow = Schema.Struct({
  id: ExecutionId,
  workflow_id: WorkflowId,
  contact_id: ContactId,
  status: Schema.Literals(EXECUTION_STATUSES),
  current_step_id: Schema.NullOr(WorkflowStepId),
  context: JsonObject,
  wait_event: Schema.NullOr(Schema.String),
  timer_id: Schema.NullOr(Schema.String),
  exit_reason: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  started_at: Schema.Date,
  updated_at: Schema.Date,
  finished_at: Schema.NullOr(Schema.Date)
})
export type ExecutionRow = typeof ExecutionRow.Type

/**
 * An execution as the dashboard lists it: with its contact's email (null once the contact is deleted),
 * read from this project's contacts only.
 */
export const EXECUTION_WITH_EMAIL_COLUMNS = `${EXECUTION_COLUMNS}, (SELECT c.email FROM contacts c
  WHERE c.project_id = workflow_executions.project_id AND c.id = workflow_executions.contact_id) AS contact_email`
export const ListedExecutionRow = Schema.Struct({ ...ExecutionRow.fields, contact_email: Schema.NullOr(Schema.String) })
export type ListedExecutionRow = typeof ListedExecutionRow.Type

export const STEP_STATUSES = ["PENDING", "SCHEDULED", "WAITING", "RUNNING", "COMPLETED", "SKIPPED", "FAILED"] as const
export type StepStatus = (typeof STEP_STATUSES)[number]

/** A step's history row (workflow_step_executions), as an execution's detail shows it. */
export const STEP_EXECUTION_COLUMNS = "id, step_id, step_type, status, output, error, attempts, started_at, finished_at"
export const StepExecutionRow = Schema.Struct({
  id: Schema.String,
  step_id: Schema.String,
  step_type: Schema.String,
  status: Schema.Literals(STEP_STATUSES),
  output: Schema.Unknown,
  error: Schema.NullOr(Schema.String),
  attempts: Schema.Number,
  started_at: Schema.Date,
  finished_at: Schema.NullOr(Schema.Date)
})
export type StepExecutionRow = typeof StepExecutionRow.Type

export const decodeWorkflowRows = Schema.decodeUnknownEffect(Schema.Array(WorkflowRow))
export const decodeStepRows = Schema.decodeUnknownEffect(Schema.Array(StepRow))
export const decodeTransitionRows = Schema.decodeUnknownEffect(Schema.Array(TransitionRow))
export const decodeExecutionRows = Schema.decodeUnknownEffect(Schema.Array(ExecutionRow))
export const decodeListedExecutionRows = Schema.decodeUnknownEffect(Schema.Array(ListedExecutionRow))
export const decodeStepExecutionRows = Schema.decodeUnknownEffect(Schema.Array(StepExecutionRow))
