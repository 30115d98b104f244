/**
 * Executions as the API drives them: a manual start (recorded RUNNING at the TRIGGER step, the actor
 * told to advance it), reading them (a page, or one with its step runs) and cancelling them. Part of
 * the Workflows repository (Workflows.ts), kept apart from the definition edits.
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { ExecutionActive, ExecutionNotActive, ReentryNotAllowed, WorkflowDisabled } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { Outbox, OutboxRow } from "../stream/Outbox.ts"
import type { WorkflowMessage } from "../stream/messages.ts"
import type { ExecutionStatus } from "../domain/workflowSteps.ts"
import { isoOrNull } from "./columns.ts"
import { mapSqlError } from "./PersistenceError.ts"
import type { WorkflowExecutions } from "./WorkflowExecutions.ts"
import { type StepExecution, toExecution, toListedExecution, type WorkflowDetail } from "./workflowRecords.ts"
import {
  decodeExecutionRows,
  decodeListedExecutionRows,
  decodeStepExecutionRows,
  EXECUTION_COLUMNS,
  EXECUTION_WITH_EMAIL_COLUMNS,
  STEP_EXECUTION_COLUMNS
} from "./workflowRows.ts"

type Command = OutboxRow

export const makeExecutionControl = (deps: {
  readonly sql: SqlClient.SqlClient
  readonly outbox: Outbox["Service"]
  readonly executions: WorkflowExecutions["Service"]
  /** Tells the project's actor (committed with the caller's transaction). */
  readonly notify: (message: WorkflowMessage) => Effect.Effect<ReadonlyArray<OutboxRow>, SqlError.SqlError>
  readonly publishNow: (commands: ReadonlyArray<Command>) => Effect.Effect<void>
}) => {
  const { executions, notify, outbox, publishNow, sql } = deps

  const startExecution = Effect.fn("Workflows.startExecution")(
    function*(workflow: WorkflowDetail, contactId: string, context: Record<string, unknown>) {
      const trigger = workflow.steps.find((step) => step.type === "TRIGGER")
      const id = uuidv7()
      const commands: Array<Command> = []
      return yield* sql.withTransaction(Effect.gen(function*() {
        // As the actor's starts do: a concurrent structural edit sees this execution or precedes it.
        const [current] = yield* sql<{ enabled: boolean }>`SELECT enabled FROM workflows WHERE id = ${workflow.id} FOR SHARE`
        // Read under the lock: a workflow being disabled concurrently is either seen disabled or disabled after this start.
        if (!current?.enabled) return yield* WorkflowDisabled.of()
        const previous = yield* sql<{ status: string }>`
        SELECT status FROM workflow_executions WHERE workflow_id = ${workflow.id} AND contact_id = ${contactId}
        ORDER BY (status IN ('RUNNING', 'WAITING')) DESC LIMIT 1`
        if (previous[0] && (previous[0].status === "RUNNING" || previous[0].status === "WAITING")) return yield* ExecutionActive.of()
        if (previous[0] && !workflow.allowReentry) return yield* ReentryNotAllowed.of()
        const rows = yield* sql`
        INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context, started_at, updated_at)
        VALUES (${id}, ${workflow.id}, ${workflow.projectId}, ${
          outbox.lanes.partitionOf(workflow.projectId, outbox.lanes.laneOf(contactId))
        }, ${contactId},
                'RUNNING', ${trigger?.id ?? null}, ${JSON.stringify(context)}::jsonb, now(), now())
        ON CONFLICT DO NOTHING
        RETURNING ${sql.literal(EXECUTION_COLUMNS)}`.pipe(Effect.flatMap(decodeExecutionRows))
        if (rows.length === 0) return yield* ExecutionActive.of()
        commands.push(
          ...(yield* notify({ kind: "workflow", projectId: workflow.projectId, type: "advance", executionId: id, contactId }))
        )
        return toExecution(rows[0]!)
      })).pipe(Effect.tap(() => publishNow(commands)))
    },
    mapSqlError
  )

  const listExecutions = Effect.fn("Workflows.listExecutions")(
    function*(workflowId: string, status: ExecutionStatus | undefined, page: number, pageSize: number) {
      const where = status === undefined ? sql`workflow_id = ${workflowId}` : sql`workflow_id = ${workflowId} AND status = ${status}`
      const [rows, [count]] = yield* Effect.all([
        sql`SELECT ${sql.literal(EXECUTION_WITH_EMAIL_COLUMNS)} FROM workflow_executions WHERE ${where}
          ORDER BY started_at DESC, id DESC LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`.pipe(
          Effect.flatMap(decodeListedExecutionRows)
        ),
        sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_executions WHERE ${where}`
      ], { concurrency: 2 })
      return { data: rows.map(toListedExecution), total: count?.n ?? 0 }
    },
    mapSqlError
  )

  const getExecution = Effect.fn("Workflows.getExecution")(function*(workflowId: string, executionId: string) {
    const [row] = yield* sql`
      SELECT ${
      sql.literal(EXECUTION_WITH_EMAIL_COLUMNS)
    } FROM workflow_executions WHERE workflow_id = ${workflowId} AND id = ${executionId}`.pipe(
      Effect.flatMap(decodeListedExecutionRows)
    )
    if (!row) return undefined
    const steps = yield* sql`
      SELECT ${sql.literal(STEP_EXECUTION_COLUMNS)} FROM workflow_step_executions
      WHERE execution_id = ${executionId} ORDER BY started_at, id`.pipe(Effect.flatMap(decodeStepExecutionRows))
    return {
      ...toListedExecution(row),
      steps: steps.map((step): StepExecution => ({
        id: step.id,
        stepId: step.step_id,
        stepType: step.step_type,
        status: step.status,
        output: step.output,
        error: step.error,
        attempts: step.attempts,
        startedAt: step.started_at.toISOString(),
        completedAt: isoOrNull(step.finished_at)
      }))
    }
  }, mapSqlError)

  // The step it was on (a delay, a wait, a webhook not yet attempted) ends with it.
  const cancelWhere = (where: { workflowId: string; executionId?: string }) =>
    sql.withTransaction(executions.cancel({ ...where, error: null, stepError: "execution cancelled" }))

  const cancel = Effect.fn("Workflows.cancel")(function*(workflowId: string, executionId: string) {
    const rows = yield* cancelWhere({ workflowId, executionId })
    if (rows[0]) return toExecution(rows[0])
    const existing = yield* sql`SELECT 1 FROM workflow_executions WHERE workflow_id = ${workflowId} AND id = ${executionId}`
    return existing.length > 0 ? yield* ExecutionNotActive.of() : undefined
  }, mapSqlError)

  const cancelAll = Effect.fn("Workflows.cancelAll")(function*(workflowId: string) {
    return (yield* cancelWhere({ workflowId })).length
  }, mapSqlError)

  return { startExecution, listExecutions, getExecution, cancel, cancelAll }
}
