/**
 * The durable timers of workflow executions (DELAY steps, WAIT_FOR_EVENT timeouts), fired by the
 * worker that leases their partition: due rows are deleted and published into their project's
 * partition in one transaction, as `timers` messages of up to TIMERS_PER_MESSAGE each, so a whole
 * cohort of expiring delays costs a few messages, not one per execution. A republish after a failed
 * commit is harmless: the actor ignores a timer that is not its execution's current one.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { clockNow } from "../lib/clock.ts"
import type { Nats } from "../stream/Nats.ts"
import type { DueTimer, WorkflowMessage } from "./messages.ts"
import { WorkflowMetrics } from "./metrics.ts"

export const TIMERS_PER_ROUND = 20_000
const TIMERS_PER_MESSAGE = 500

/** Fires the due timers of `partitions`; answers how many fired (more may be due when it is the round's maximum). */
export const fireWorkflowTimers = (nats: Nats["Service"], partitions: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    if (partitions.length === 0) return 0
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      const due = yield* sql<{ execution_id: string; id: string; project_id: string; step_id: string; due_at: Date }>`
        DELETE FROM workflow_timers WHERE execution_id IN (
          SELECT execution_id FROM workflow_timers
          WHERE partition IN ${sql.in(partitions)} AND due_at <= ${new Date(clockNow()).toISOString()}::timestamptz
          ORDER BY due_at LIMIT ${TIMERS_PER_ROUND}
          FOR UPDATE SKIP LOCKED)
        RETURNING execution_id, id, project_id, step_id, due_at`
      if (due.length === 0) return 0
      const byProject = new Map<string, Array<DueTimer>>()
      for (const row of due) {
        const list = byProject.get(row.project_id) ?? []
        list.push({ executionId: row.execution_id, stepId: row.step_id, timerId: row.id, dueAt: new Date(row.due_at).toISOString() })
        byProject.set(row.project_id, list)
      }
      const messages: Array<{ subject: string; payload: string; id: string }> = []
      for (const [projectId, timers] of byProject) {
        timers.sort((a, b) => a.dueAt.localeCompare(b.dueAt))
        for (let i = 0; i < timers.length; i += TIMERS_PER_MESSAGE) {
          const chunk = timers.slice(i, i + TIMERS_PER_MESSAGE)
          const message: WorkflowMessage = { kind: "workflow", projectId, type: "timers", timers: chunk }
          messages.push({ subject: nats.names.inSubject(projectId, "workflow"), payload: JSON.stringify(message), id: chunk[0]!.timerId })
        }
      }
      yield* Effect.tryPromise(() =>
        Promise.all(messages.map((message) => nats.js.publish(message.subject, message.payload, { msgID: message.id })))
      )
      WorkflowMetrics.timersFired.inc(due.length)
      return due.length
    }))
  })
