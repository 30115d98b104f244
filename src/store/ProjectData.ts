/**
 * A project's irreversible data reset, and the watermark that keeps old stream messages from bringing
 * the wiped data back.
 *
 * The reset runs in one transaction that locks the project's row, records the IN stream's last
 * sequence as `projects.data_reset_seq` and deletes the project's data. Every message of the project
 * at or below that sequence was queued before the reset; the worker's batch transaction reads the
 * watermark with `resetWatermarks` (FOR SHARE: it waits for a reset in progress, and a reset waits for
 * batches in progress) and skips those messages, so nothing of the old data reappears.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { pgArray } from "../lib/pgArray.ts"
import { Nats } from "../stream/Nats.ts"
import { wipeEmails } from "./Billing.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

/**
 * Tables holding the project's data, children first (emails go before them all: `wipeEmails`). Kept: the
 * project row (keys, settings), members, domains, suppressions (a reset must not become a way to mail
 * addresses that bounced or complained), billing with what the month's deleted mail counted, and the
 * stream bookkeeping (project_offsets).
 */
const WIPED_TABLES = [
  "workflow_step_executions",
  "workflow_timers",
  "workflow_executions",
  "workflows",
  "campaigns",
  "segment_memberships",
  "segments",
  "timers",
  "templates",
  "event_aggregates",
  "events",
  "contact_fields",
  "contacts",
  "dead_letters",
  "idempotency_keys"
] as const

export interface ResetResult {
  /** The IN stream sequence at or below which the project's queued messages are skipped. */
  readonly resetSeq: number
}

/**
 * The reset watermark of each project, read inside the caller's transaction (share-locked).
 * For the worker's batch transaction: drop every message of project P whose stream sequence is
 * at or below the returned value (still advancing the applied sequence and acking them).
 */
export const resetWatermarks = (sql: SqlClient.SqlClient, projectIds: ReadonlyArray<string>) =>
  sql<{ id: string; data_reset_seq: string }>`
    SELECT id, data_reset_seq::text FROM projects WHERE id = ANY(${pgArray(projectIds)}::uuid[]) ORDER BY id FOR SHARE`.pipe(
    Effect.map((rows) => new Map(rows.map((row) => [row.id, Number(row.data_reset_seq)])))
  )

export class ProjectData extends Context.Service<ProjectData, {
  /** Wipes the project's data; undefined when the project does not exist. */
  readonly reset: (projectId: string) => Effect.Effect<ResetResult | undefined, PersistenceError>
}>()("app/store/ProjectData") {
  static readonly layer = Layer.effect(
    ProjectData,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats

      const lastInSequence = Effect.tryPromise(() => nats.jsm.streams.info(nats.names.inStream)).pipe(
        Effect.map((info) => info.state.last_seq),
        // Kept a defect: NATS not answering is no SQL failure a caller could handle; the reset rolls back, a logged 500.
        Effect.orDie
      )

      const reset = Effect.fn("ProjectData.reset")(function*(projectId: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const [project] = yield* sql`SELECT id FROM projects WHERE id = ${projectId} FOR UPDATE`
          if (!project) return undefined
          // Read under the lock: every message published before this point is at or below it.
          const resetSeq = yield* lastInSequence
          yield* sql`UPDATE projects SET data_reset_seq = ${resetSeq}, data_reset_at = now(), updated_at = now() WHERE id = ${projectId}`
          // The emails first, while their campaigns and workflows still say what they count as.
          yield* wipeEmails(sql, projectId)
          for (const table of WIPED_TABLES) {
            yield* sql`DELETE FROM ${sql(table)} WHERE project_id = ${projectId}`
          }
          // Emitted events not yet relayed (their subjects carry the project id).
          yield* sql`DELETE FROM outbox WHERE subject LIKE ${`%.${projectId}.%`}`
          return { resetSeq }
        }))
      }, mapSqlError)

      return ProjectData.of({ reset })
    })
  )
}
