/**
 * What the workflows API shows: a workflow with its steps and transitions, its executions and their
 * step runs, mapped from the rows of workflowRows.ts. Apart from the repository (Workflows.ts) because
 * the engine and the usage endpoints read these shapes too.
 */
import type { ContactId, ExecutionId, ProjectId, WorkflowId } from "../domain/identifiers.ts"
import type { ExecutionStatus, Step, Transition } from "../domain/workflowSteps.ts"
import { isoOrNull } from "./columns.ts"
import type { ExecutionRow, ListedExecutionRow, StepRow, StepStatus, TransitionRow, WorkflowRow } from "./workflowRows.ts"

export interface Workflow {
  readonly id: WorkflowId
  readonly projectId: ProjectId
  readonly name: string
  readonly description: string | null
  readonly triggerType: "EVENT" | "MANUAL"
  readonly triggerConfig: { readonly eventName?: string }
  readonly enabled: boolean
  readonly allowReentry: boolean
  /** Why the workflow's SEND_EMAIL steps wait (its monthly billing cap reached); null while they may send. */
  readonly billingHold: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface StoredStep extends Step {
  readonly position: { readonly x: number; readonly y: number } | null
  readonly createdAt: string
}

export interface StoredTransition extends Transition {
  readonly createdAt: string
}

export interface WorkflowDetail extends Workflow {
  readonly steps: ReadonlyArray<StoredStep>
  readonly transitions: ReadonlyArray<StoredTransition>
}

export interface StepExecution {
  readonly id: string
  readonly stepId: string
  readonly stepType: string
  readonly status: StepStatus
  readonly output: unknown
  readonly error: string | null
  readonly attempts: number
  readonly startedAt: string
  readonly completedAt: string | null
}

export interface Execution {
  readonly id: ExecutionId
  readonly workflowId: WorkflowId
  readonly contactId: ContactId
  readonly status: ExecutionStatus
  readonly currentStepId: string | null
  readonly context: Record<string, unknown>
  readonly exitReason: string | null
  readonly error: string | null
  readonly startedAt: string
  readonly updatedAt: string
  readonly completedAt: string | null
}

/** An execution with its contact's email, for people to read (null once the contact is deleted). */
export interface ListedExecution extends Execution {
  readonly contactEmail: string | null
}

export const toWorkflow = (row: WorkflowRow): Workflow => ({
  id: row.id,
  projectId: row.project_id,
  name: row.name,
  description: row.description,
  triggerType: row.trigger_type,
  triggerConfig: row.trigger_config,
  enabled: row.enabled,
  allowReentry: row.allow_reentry,
  billingHold: row.billing_hold ?? null,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

export const toStep = (row: StepRow): StoredStep => ({
  id: row.id,
  type: row.type,
  name: row.name,
  config: row.config,
  position: row.position,
  createdAt: row.created_at.toISOString()
})

export const toTransition = (row: TransitionRow): StoredTransition => ({
  id: row.id,
  fromStepId: row.from_step_id,
  toStepId: row.to_step_id,
  branch: row.branch,
  waitOutcome: row.wait_outcome,
  createdAt: row.created_at.toISOString()
})

/** What an execution shows alike to the API and to the engine (WorkflowExecutions' ExecutionState). */
export const executionFields = (row: ExecutionRow) => ({
  id: row.id,
  workflowId: row.workflow_id,
  contactId: row.contact_id,
  status: row.status,
  currentStepId: row.current_step_id,
  context: row.context,
  exitReason: row.exit_reason,
  error: row.error,
  startedAt: row.started_at.toISOString()
})

export const toExecution = (row: ExecutionRow): Execution => ({
  ...executionFields(row),
  updatedAt: row.updated_at.toISOString(),
  completedAt: isoOrNull(row.finished_at)
})

export const toListedExecution = (row: ListedExecutionRow): ListedExecution => ({ ...toExecution(row), contactEmail: row.contact_email })
