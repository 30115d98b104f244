/**
 * Sent mail keeps its rendered content (HTML, headers, attachments) for EMAIL_CONTENT_RETENTION_DAYS so
 * the Emails page can show and download it; past that, every worker's sweep empties it in small batches
 * (rows locked by another worker's sweep are skipped) and stamps content_expired_at. Queued mail is
 * never touched: the sender reads it. The row stays, for its status, timeline, counters and links.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"

const EVERY = Duration.hours(1)
/** Rows emptied per statement: each passes through the emails triggers' transition tables. */
const BATCH = 500

/** Empties the content of finished mail queued before `cutoff`, one batch; answers how many rows. */
export const expireContent = (sql: SqlClient.SqlClient, cutoff: Date) =>
  sql<{ id: string }>`
    UPDATE emails SET html = '', headers = '{}'::jsonb, attachments = '[]'::jsonb, raw_message = NULL, content_expired_at = now()
    WHERE id IN (
      SELECT id FROM emails
      WHERE content_expired_at IS NULL AND status NOT IN ('PENDING', 'SENDING') AND created_at < ${cutoff.toISOString()}::timestamptz
      ORDER BY created_at LIMIT ${BATCH}
      FOR UPDATE SKIP LOCKED)
    RETURNING id`.pipe(Effect.map((rows) => rows.length))

export const EmailContentRetentionLive = Layer.effectDiscard(Effect.gen(function*() {
  const days = (yield* AppConfig).emailContentRetentionDays
  if (days === 0) return
  const sql = yield* SqlClient.SqlClient
  const sweep = Effect.gen(function*() {
    const cutoff = new Date((yield* Clock.currentTimeMillis) - days * 86_400_000)
    let total = 0
    for (;;) {
      const emptied = yield* expireContent(sql, cutoff)
      total += emptied
      if (emptied < BATCH) break
    }
    if (total > 0) yield* Effect.logInfo("sent mail past its retention emptied of its content", { emails: total, days })
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("emptying old mail content failed; trying again later", cause)))
  yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(EVERY)))
}))
