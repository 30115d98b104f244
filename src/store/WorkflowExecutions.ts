/**
 * Workflow executions in Postgres, for the engine (in the actor's batch transaction) and for the api's
 * cancellations: lock and load the executions a batch touches, start one (at most once per source
 * event, never beside an active one, never again without reentry), claim a step's execution key, cancel
 * active executions (their timers go, the step each was on ends SKIPPED), and write a batch's changes
 * back set-wise (executions, step history, timers, workflows' billing holds).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { pgArray } from "../lib/pgArray.ts"
import type { ExecutionStatus, StepType } from "../domain/workflowSteps.ts"
import { isoOrNull } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { executionFields } from "./workflowRecords.ts"
import * as Rows from "./workflowRows.ts"

/** An execution as the engine changes it in memory during a batch (`dirty`: to be written back). */
export interface ExecutionState {
  readonly id: string
  readonly workflowId: string
  readonly contactId: string
  status: ExecutionStatus
  currentStepId: string | null
  context: Record<string, unknown>
  waitEvent: string | null
  timerId: string | null
  exitReason: string | null
  error: string | null
  readonly startedAt: string
  finishedAt: string | null
  dirty: boolean
}

export const toExecutionState = (row: Rows.ExecutionRow): ExecutionState => ({
  ...executionFields(row),
  waitEvent: row.wait_event,
  timerId: row.timer_id,
  finishedAt: isoOrNull(row.finished_at),
  dirty: false
})

/** A step's history row as a batch writes it. */
export interface StepRecord {
  id: string
  executionId: string
  stepId: string
  stepType: string
  status: "WAITING" | "RUNNING" | "COMPLETED" | "FAILED" | "SKIPPED"
  output: unknown
  error: string | null
  startedAt: string
  finishedAt: string | null
}

export interface NewTimer {
  readonly executionId: string
  readonly id: string
  readonly stepId: string
  readonly dueAt: string
}

/** Which active executions to cancel (always within one project or one workflow). */
export interface CancelWhere {
  readonly projectId?: string
  readonly workflowId?: string
  readonly executionId?: string
  readonly contactId?: string
  /** Executions the caller cancels itself (loaded and changed in memory). */
  readonly except?: ReadonlyArray<string>
  /** Recorded on the execution (null: its error is left as it was). */
  readonly error: string | null
  /** Recorded on the step each one was on. */
  readonly stepError: string
}

export interface BatchWrite {
  readonly executions: ReadonlyArray<ExecutionState>
  readonly steps: ReadonlyArray<StepRecord>
  readonly clearedTimers: ReadonlyArray<string>
  readonly newTimers: ReadonlyArray<NewTimer>
  /** Workflows whose SEND_EMAIL steps wait at the billing cap (with why), or no longer (null). */
  readonly holds: ReadonlyArray<{ readonly id: string; readonly reason: string | null }>
  readonly at: string
}

export interface WorkflowDefinitionRows {
  readonly workflows: ReadonlyArray<Rows.WorkflowRow>
  readonly steps: ReadonlyArray<Rows.StepRow>
  readonly transitions: ReadonlyArray<Rows.TransitionRow>
}

type Sql<A> = Effect.Effect<A, PersistenceError>

export class WorkflowExecutions extends Context.Service<WorkflowExecutions, {
  /** The project's workflows with their steps and transitions (rows). */
  readonly definitions: (projectId: string) => Sql<WorkflowDefinitionRows>
  /** Locks (FOR UPDATE, in id order) and loads executions by id. */
  readonly lock: (projectId: string, ids: ReadonlyArray<string>) => Sql<ReadonlyArray<ExecutionState>>
  /** Locks and loads the contacts' executions waiting for one of the events. */
  readonly lockWaiting: (
    projectId: string,
    eventNames: ReadonlyArray<string>,
    contactIds: ReadonlyArray<string>
  ) => Sql<ReadonlyArray<ExecutionState>>
  /**
   * Starts an execution at the TRIGGER step, unless one is active for the contact, or (without
   * reentry) one ever ran, or the contact is gone; the source event id makes a second start impossible.
   */
  readonly start: (input: {
    readonly projectId: string
    readonly workflowId: string
    readonly allowReentry: boolean
    readonly partition: number
    readonly contactId: string
    readonly triggerStepId: string
    readonly context: Readonly<Record<string, unknown>>
    readonly sourceEventId: string
    readonly at: string
  }) => Sql<ExecutionState | undefined>
  /**
   * Claims a step's execution key now (side-effect steps): false when it was claimed before. A step
   * waiting at a billing cap (WAITING) is claimed by its retry.
   */
  readonly claimStep: (input: {
    readonly projectId: string
    readonly executionId: string
    readonly stepId: string
    readonly stepType: StepType
    readonly status: "COMPLETED" | "RUNNING"
    readonly output: unknown
    readonly at: string
  }) => Sql<boolean>
  /** Cancels active executions: their timers go and the step each was on ends SKIPPED. Returns the cancelled rows. */
  readonly cancel: (where: CancelWhere) => Sql<ReadonlyArray<Rows.ExecutionRow>>
  /** Ends the open steps of executions (waiting, scheduled, pending, a webhook not yet attempted) as SKIPPED. */
  readonly skipOpenSteps: (executionIds: ReadonlyArray<string>, error: string) => Sql<void>
  /** Writes a batch's changes back, set-wise. */
  readonly write: (projectId: string, batch: BatchWrite) => Sql<void>
}>()("app/store/WorkflowExecutions") {
  static readonly layer = Layer.effect(
    WorkflowExecutions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const definitions = Effect.fn("WorkflowExecutions.definitions")(function*(projectId: string) {
        const workflows = yield* sql`SELECT ${sql.literal(Rows.WORKFLOW_COLUMNS)} FROM workflows WHERE project_id = ${projectId}`.pipe(
          Effect.flatMap(Rows.decodeWorkflowRows)
        )
        const ids = workflows.map((row) => row.id)
        const [steps, transitions] = ids.length === 0 ? [[], []] : yield* Effect.all([
          sql`SELECT ${sql.literal(Rows.STEP_COLUMNS)} FROM workflow_steps WHERE workflow_id IN ${sql.in(ids)}`.pipe(
            Effect.flatMap(Rows.decodeStepRows)
          ),
          sql`SELECT ${sql.literal(Rows.TRANSITION_COLUMNS)} FROM workflow_transitions WHERE workflow_id IN ${sql.in(ids)}`.pipe(
            Effect.flatMap(Rows.decodeTransitionRows)
          )
        ])
        return { workflows, steps, transitions } satisfies WorkflowDefinitionRows
      }, mapSqlError)

      const lock = Effect.fn("WorkflowExecutions.lock")(function*(projectId: string, ids: ReadonlyArray<string>) {
        if (ids.length === 0) return []
        const rows = yield* sql`
          SELECT ${sql.literal(Rows.EXECUTION_COLUMNS)} FROM workflow_executions WHERE id = ANY(${
          pgArray(ids)
        }::uuid[]) AND project_id = ${projectId}
          ORDER BY id FOR UPDATE`.pipe(Effect.flatMap(Rows.decodeExecutionRows))
        return rows.map(toExecutionState)
      }, mapSqlError)

      const lockWaiting = Effect.fn("WorkflowExecutions.lockWaiting")(function*(
        projectId: string,
        eventNames: ReadonlyArray<string>,
        contactIds: ReadonlyArray<string>
      ) {
        if (eventNames.length === 0 || contactIds.length === 0) return []
        const rows = yield* sql`
          SELECT ${sql.literal(Rows.EXECUTION_COLUMNS)} FROM workflow_executions
          WHERE project_id = ${projectId} AND status = 'WAITING'
            AND wait_event = ANY(${pgArray(eventNames)}::text[])
            AND contact_id = ANY(${pgArray(contactIds)}::uuid[])
          ORDER BY id FOR UPDATE`.pipe(Effect.flatMap(Rows.decodeExecutionRows))
        return rows.map(toExecutionState)
      }, mapSqlError)

      const start = Effect.fn("WorkflowExecutions.start")(function*(input: Parameters<WorkflowExecutions["Service"]["start"]>[0]) {
        const [row] = yield* sql`
          INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context,
                                           source_event_id, started_at, updated_at)
          SELECT ${uuidv7()}, ${input.workflowId}, ${input.projectId}, ${input.partition}, ${input.contactId}, 'RUNNING', ${input.triggerStepId},
                 ${JSON.stringify(input.context)}::jsonb, ${input.sourceEventId}, ${input.at}::timestamptz, ${input.at}::timestamptz
          WHERE NOT EXISTS (
            SELECT 1 FROM workflow_executions
            WHERE workflow_id = ${input.workflowId} AND contact_id = ${input.contactId}
              AND (${!input.allowReentry} OR status IN ('RUNNING', 'WAITING')))
            AND EXISTS (SELECT 1 FROM contacts WHERE id = ${input.contactId})
            -- Share-locks the workflow: a structural edit (which locks it for update, then checks for
            -- active executions) either sees this execution or commits before it starts.
            AND EXISTS (SELECT 1 FROM workflows WHERE id = ${input.workflowId} FOR SHARE)
          ON CONFLICT DO NOTHING
          RETURNING ${sql.literal(Rows.EXECUTION_COLUMNS)}`.pipe(Effect.flatMap(Rows.decodeExecutionRows))
        return row ? toExecutionState(row) : undefined
      }, mapSqlError)

      const claimStep = Effect.fn("WorkflowExecutions.claimStep")(
        function*(input: Parameters<WorkflowExecutions["Service"]["claimStep"]>[0]) {
          const rows = yield* sql`
          INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, output,
                                                next_attempt_at, started_at, finished_at)
          VALUES (${uuidv7()}, ${input.executionId}, ${input.stepId}, ${input.stepType}, ${input.projectId},
                  (SELECT partition FROM workflow_executions WHERE id = ${input.executionId}), ${input.status},
                  ${JSON.stringify(input.output)}::jsonb, ${input.status === "RUNNING" ? sql`now()` : null}, ${input.at}::timestamptz,
                  ${input.status === "COMPLETED" ? input.at : null}::timestamptz)
          ON CONFLICT (execution_id, step_id) DO UPDATE SET
            status = EXCLUDED.status, output = EXCLUDED.output, next_attempt_at = EXCLUDED.next_attempt_at,
            error = NULL, finished_at = EXCLUDED.finished_at
          WHERE workflow_step_executions.status = 'WAITING'
          RETURNING id`
          return rows.length > 0
        },
        mapSqlError
      )

      const skipOpenSteps = Effect.fn("WorkflowExecutions.skipOpenSteps")(function*(executionIds: ReadonlyArray<string>, error: string) {
        if (executionIds.length === 0) return
        const ids = pgArray(executionIds)
        yield* sql`UPDATE workflow_step_executions SET status = 'SKIPPED', error = ${error}, finished_at = now()
                   WHERE execution_id = ANY(${ids}::uuid[])
                     AND (status IN ('WAITING', 'SCHEDULED', 'PENDING') OR (status = 'RUNNING' AND NOT in_flight))`
      }, mapSqlError)

      const cancel = Effect.fn("WorkflowExecutions.cancel")(function*(where: CancelWhere) {
        const conditions = [
          sql`status IN ('RUNNING', 'WAITING')`,
          ...(where.projectId === undefined ? [] : [sql`project_id = ${where.projectId}`]),
          ...(where.workflowId === undefined ? [] : [sql`workflow_id = ${where.workflowId}`]),
          ...(where.executionId === undefined ? [] : [sql`id = ${where.executionId}`]),
          ...(where.contactId === undefined ? [] : [sql`contact_id = ${where.contactId}`]),
          ...(where.except === undefined || where.except.length === 0 ? [] : [sql`NOT (id = ANY(${pgArray(where.except)}::uuid[]))`])
        ]
        const rows = yield* sql`
          UPDATE workflow_executions SET status = 'CANCELLED', error = COALESCE(${where.error}, error), wait_event = NULL,
                 timer_id = NULL, updated_at = now(), finished_at = now()
          WHERE ${sql.and(conditions)}
          RETURNING ${sql.literal(Rows.EXECUTION_COLUMNS)}`.pipe(Effect.flatMap(Rows.decodeExecutionRows))
        if (rows.length > 0) {
          const ids = rows.map((row) => row.id)
          yield* sql`DELETE FROM workflow_timers WHERE execution_id = ANY(${pgArray(ids)}::uuid[])`
          yield* skipOpenSteps(ids, where.stepError)
        }
        return rows
      }, mapSqlError)

      const write = Effect.fn("WorkflowExecutions.write")(function*(projectId: string, batch: BatchWrite) {
        const dirty = batch.executions.filter((exec) => exec.dirty)
        if (dirty.length > 0) {
          yield* sql`
            UPDATE workflow_executions e SET
              status = x.status, current_step_id = x."currentStepId", context = x.context, wait_event = x."waitEvent",
              timer_id = x."timerId", exit_reason = x."exitReason", error = x.error, updated_at = ${batch.at}::timestamptz,
              finished_at = x."finishedAt"
            FROM jsonb_to_recordset(${JSON.stringify(dirty)}::jsonb) AS x(
              id uuid, status text, "currentStepId" uuid, context jsonb, "waitEvent" text, "timerId" uuid, "exitReason" text,
              error text, "finishedAt" timestamptz)
            WHERE e.id = x.id`
        }
        if (batch.steps.length > 0) {
          yield* sql`
            INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, output, error,
                                                  started_at, finished_at)
            SELECT x.id, x."executionId", x."stepId", x."stepType", ${projectId},
                   (SELECT e.partition FROM workflow_executions e WHERE e.id = x."executionId"), x.status, x.output, x.error,
                   x."startedAt", x."finishedAt"
            FROM jsonb_to_recordset(${JSON.stringify(batch.steps)}::jsonb) AS x(
              id uuid, "executionId" uuid, "stepId" uuid, "stepType" text, status text, output jsonb, error text,
              "startedAt" timestamptz, "finishedAt" timestamptz)
            ON CONFLICT (execution_id, step_id) DO UPDATE SET
              status = EXCLUDED.status, output = COALESCE(EXCLUDED.output, workflow_step_executions.output),
              error = EXCLUDED.error, finished_at = EXCLUDED.finished_at`
        }
        if (batch.clearedTimers.length > 0) {
          yield* sql`DELETE FROM workflow_timers WHERE execution_id = ANY(${pgArray(batch.clearedTimers)}::uuid[])`
        }
        if (batch.newTimers.length > 0) {
          yield* sql`
            INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
            SELECT x."executionId", x.id, ${projectId}, (SELECT e.partition FROM workflow_executions e WHERE e.id = x."executionId"),
                   x."stepId", x."dueAt"
            FROM jsonb_to_recordset(${
            JSON.stringify(batch.newTimers)
          }::jsonb) AS x("executionId" uuid, id uuid, "stepId" uuid, "dueAt" timestamptz)
            ON CONFLICT (execution_id) DO UPDATE SET id = EXCLUDED.id, step_id = EXCLUDED.step_id, due_at = EXCLUDED.due_at`
        }
        if (batch.holds.length > 0) {
          yield* sql`
            UPDATE workflows w SET billing_hold = x.reason
            FROM jsonb_to_recordset(${JSON.stringify(batch.holds)}::jsonb) AS x(id uuid, reason text)
            WHERE w.id = x.id AND w.billing_hold IS DISTINCT FROM x.reason`
        }
      }, mapSqlError)

      return WorkflowExecutions.of({ definitions, lock, lockWaiting, start, claimStep, cancel, skipOpenSteps, write })
    })
  )
}
