/**
 * Resumes mail held at a monthly billing cap (campaign fan-out, src/campaigns/fanout.ts; workflow
 * SEND_EMAIL steps, src/workflows/engine.ts) once the project has room again: the cap raised or removed
 * (PUT billing-limits resumes at once), the month turned, or queued mail that failed freed room (every
 * worker looks every HELD_MAIL_CHECK_SECONDS).
 *
 * - A held campaign (SENDING with `billing_hold`) gets its next fan-out step through the outbox. The
 *   hold is cleared by the statement that picks it, so two resumers (two workers, or a worker and a
 *   PUT) never start two step chains for one campaign; a step that still falls short records it again.
 * - Held workflow executions wait on a timer (at the month's turn) on their SEND_EMAIL step; the timers
 *   of as many of them as there is room for, plus one, are brought forward. The extra one meets the cap
 *   again when more are waiting than fit, so the workflow's hold is recorded again rather than cleared
 *   by the sends that fit; the others stay parked without a batch each. Without a cap, every one is
 *   brought forward and the workflows' holds are cleared here.
 */
import { Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { Billing } from "../store/Billing.ts"
import { mapSqlError } from "../store/PersistenceError.ts"
import { Outbox } from "../stream/Outbox.ts"

/** Resumes what the project's caps now allow; answers how many campaigns and executions were resumed. */
export const resumeHeldMail = (
  sql: SqlClient.SqlClient,
  outbox: Outbox["Service"],
  billing: Billing["Service"],
  projectId: string
) =>
  sql.withTransaction(Effect.gen(function*() {
    let campaigns = 0
    const campaignRoom = yield* billing.remaining(projectId, "campaigns")
    if (campaignRoom === null || campaignRoom > 0) {
      const resumed = yield* sql<{ id: string }>`
        UPDATE campaigns SET billing_hold = NULL, updated_at = now()
        WHERE project_id = ${projectId} AND status = 'SENDING' AND billing_hold IS NOT NULL
        RETURNING id`
      campaigns = resumed.length
      if (resumed.length > 0) {
        yield* outbox.append(resumed.map((row) => ({
          kind: "command" as const,
          projectId,
          commandId: uuidv7(),
          type: "campaignStep" as const,
          campaignId: row.id
        })))
      }
    }
    let executions = 0
    const workflowRoom = yield* billing.remaining(projectId, "workflows")
    if (workflowRoom === null || workflowRoom > 0) {
      // A timer on a SEND_EMAIL step is a send held at the cap (DELAY and WAIT_FOR_EVENT timers sit on their own steps).
      const pulled = yield* sql<{ execution_id: string }>`
        UPDATE workflow_timers SET due_at = now()
        WHERE execution_id IN (
          SELECT t.execution_id FROM workflow_timers t JOIN workflow_steps s ON s.id = t.step_id
          WHERE t.project_id = ${projectId} AND s.type = 'SEND_EMAIL' AND t.due_at > now()
          ORDER BY t.execution_id
          LIMIT ${workflowRoom === null ? null : workflowRoom + 1})
        RETURNING execution_id`
      executions = pulled.length
      // Without a cap nothing can be held again; with one, the sends (or the extra one held) settle it.
      if (workflowRoom === null)
        yield* sql`UPDATE workflows SET billing_hold = NULL WHERE project_id = ${projectId} AND billing_hold IS NOT NULL`
    }
    return { campaigns, executions }
  })).pipe(mapSqlError)

/** The projects with a held campaign or workflow. */
const heldProjects = (sql: SqlClient.SqlClient) =>
  sql<{ project_id: string }>`
    SELECT project_id FROM campaigns WHERE status = 'SENDING' AND billing_hold IS NOT NULL
    UNION SELECT project_id FROM workflows WHERE billing_hold IS NOT NULL`.pipe(Effect.map((rows) => rows.map((row) => row.project_id)))

/** One look at every project with held mail (each worker runs it; resuming is idempotent). */
export const resumeHeldRound = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const outbox = yield* Outbox
  const billing = yield* Billing
  for (const projectId of yield* heldProjects(sql)) {
    const resumed = yield* resumeHeldMail(sql, outbox, billing, projectId)
    if (resumed.campaigns + resumed.executions > 0) yield* Effect.logInfo("resumed mail held at a billing cap", { projectId, ...resumed })
  }
})

/** Run by the worker role: a look every HELD_MAIL_CHECK_SECONDS (the worst-case lateness of a resume after the month's turn). */
export const HeldMailResumerLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  yield* Effect.forkScoped(Effect.repeat(
    resumeHeldRound.pipe(Effect.catchCause((cause) => Effect.logWarning("held mail check failed", cause))),
    Schedule.spaced(`${config.heldMailCheckSeconds} seconds`)
  ))
}))
