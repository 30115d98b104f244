/**
 * The durable timers of workflow executions (DELAY steps, WAIT_FOR_EVENT timeouts), fired by the
 * worker that leases their partition: due rows are deleted and published into their project's
 * partition in one transaction, as `timers` messages of up to TIMERS_PER_MESSAGE each, so a whole
 * cohort of expiring delays costs a few messages, not one per execution. A republish after a failed
 * commit is harmless: the actor ignores a timer that is not its execution's current one. A row that
 * cannot become a message (an impossible due time) fails its execution alone, with the reason.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { mapRows } from "../lib/isolation.ts"
import type { Nats } from "../stream/Nats.ts"
import type { Outbox } from "../stream/Outbox.ts"
import type { DueTimer, WorkflowMessage } from "./messages.ts"
import { WorkflowMetrics } from "./metrics.ts"

export const TIMERS_PER_ROUND = 20_000
const TIMERS_PER_MESSAGE = 500

/** Fires the due timers of `partitions`; answers how many fired (more may be due when it is the round's maximum). */
export const fireWorkflowTimers = (nats: Nats["Service"], outbox: Outbox["Service"], partitions: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    if (partitions.length === 0) return 0
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      const due = yield* sql<{ execution_id: string; id: string; project_id: string; step_id: string; due_at: Date; contact_id: string }>`
        DELETE FROM workflow_timers t USING workflow_executions e
        WHERE e.id = t.execution_id AND t.execution_id IN (
          SELECT execution_id FROM workflow_timers
          WHERE partition IN ${sql.in(partitions)} AND due_at <= ${new Date(yield* Clock.currentTimeMillis).toISOString()}::timestamptz
          ORDER BY due_at LIMIT ${TIMERS_PER_ROUND}
          FOR UPDATE SKIP LOCKED)
        RETURNING t.execution_id, t.id, t.project_id, t.step_id, t.due_at, e.contact_id`
      if (due.length === 0) return 0
      const { mapped, failed } = yield* mapRows(
        "workflow timers",
        due,
        (row) => ({ projectId: row.project_id, executionId: row.execution_id, timerId: row.id }),
        (row): [string, number, DueTimer] => [row.project_id, outbox.lanes.laneOf(row.contact_id), {
          executionId: row.execution_id,
          stepId: row.step_id,
          timerId: row.id,
          dueAt: new Date(row.due_at).toISOString()
        }]
      )
      if (failed.length > 0) {
        yield* failExecutions(sql, failed.map(({ row, reason }) => ({ executionId: row.execution_id, timerId: row.id, reason })))
      }
      // One message per lane of a project (up to TIMERS_PER_MESSAGE timers), to the lane of the executions' contacts.
      const byLane = new Map<string, { projectId: string; lane: number; timers: Array<DueTimer> }>()
      for (const [projectId, lane, timer] of mapped) {
        const key = `${projectId}/${lane}`
        const group = byLane.get(key)
        if (group) group.timers.push(timer)
        else byLane.set(key, { projectId, lane, timers: [timer] })
      }
      const messages: Array<{ subject: string; payload: string; id: string }> = []
      for (const { projectId, lane, timers } of byLane.values()) {
        timers.sort((a, b) => a.dueAt.localeCompare(b.dueAt))
        for (let i = 0; i < timers.length; i += TIMERS_PER_MESSAGE) {
          const chunk = timers.slice(i, i + TIMERS_PER_MESSAGE)
          const message: WorkflowMessage = { kind: "workflow", projectId, type: "timers", timers: chunk, lane }
          messages.push({ subject: outbox.subject(projectId, lane, "workflow"), payload: JSON.stringify(message), id: chunk[0]!.timerId })
        }
      }
      yield* Effect.tryPromise(() =>
        Promise.all(messages.map((message) => nats.js.publish(message.subject, message.payload, { msgID: message.id })))
      )
      WorkflowMetrics.timersFired.inc(due.length)
      return due.length
    }))
  })

/**
 * Fails the executions whose timer could not be fired, if that timer is still the one they wait on
 * (as a cancel through the api, an immediate change the actor respects): the step waiting ends FAILED.
 */
const failExecutions = (sql: SqlClient.SqlClient, timers: ReadonlyArray<{ executionId: string; timerId: string; reason: string }>) =>
  sql`
    WITH failed AS (
      UPDATE workflow_executions e SET status = 'FAILED', error = 'its timer could not be fired: ' || x.reason,
             wait_event = NULL, timer_id = NULL, updated_at = now(), finished_at = now()
      FROM jsonb_to_recordset(${JSON.stringify(timers)}::jsonb) AS x("executionId" uuid, "timerId" uuid, reason text)
      WHERE e.id = x."executionId" AND e.status = 'WAITING' AND e.timer_id = x."timerId"
      RETURNING e.id, e.current_step_id, x.reason
    )
    UPDATE workflow_step_executions s SET status = 'FAILED', error = 'its timer could not be fired: ' || failed.reason,
           finished_at = now()
    FROM failed WHERE s.execution_id = failed.id AND s.step_id = failed.current_step_id AND s.status = 'WAITING'`
