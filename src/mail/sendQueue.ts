/**
 * The statements the sender runs against the mail queue (the emails table): claiming a round (PENDING →
 * SENDING, with what the sender needs to decide, and no content), reading content (a round's small
 * emails at once, a large one alone), and recording outcomes (FAILED / SUPPRESSED one by one, a round's
 * SENT mail in one statement with its email.sent events). Kept apart from Sender.ts, which decides
 * what to send when; these only read and write rows.
 */
import { Cause, Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Attachment, type EmailContent, type EmailRow, emailEventData, summaryColumns, toEmailRecord } from "../store/Emails.ts"
import { HELD_MARKETING_SQL } from "../store/ProjectHealth.ts"
import type { Outbox } from "../stream/Outbox.ts"
import { storableReason } from "../lib/isolation.ts"
import { pgArray } from "../lib/pgArray.ts"

export interface ClaimedRow extends EmailRow {
  readonly marketing_template: boolean
  readonly contact_subscribed: boolean | null
  readonly suppressed: boolean
  /** The content's size as stored (compressed for jsonb): enough to tell small from large. */
  readonly content_bytes: number
  readonly html_bytes: number
}

export const makeSendQueue = (sql: SqlClient.SqlClient, outbox: Outbox["Service"]) => {
  // Sizes as stored, read without decompressing anything.
  const claim = (projectId: string, limit: number) =>
    sql<ClaimedRow>`
      WITH claimed AS (
        UPDATE emails e SET status = 'SENDING', attempts = e.attempts + 1
        WHERE e.id IN (
          SELECT id FROM emails
          WHERE project_id = ${projectId} AND status = 'PENDING' AND next_attempt_at <= now()
            -- A disabled project's marketing mail is held (not dropped) until it is enabled again.
            AND ${sql.literal(HELD_MARKETING_SQL)}
          ORDER BY priority, next_attempt_at, id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING ${sql.literal(summaryColumns("e"))}, e.priority, e.marketing_template, octet_length(e.html) AS html_bytes,
                  octet_length(e.subject) + octet_length(e.html) + pg_column_size(e.headers) + pg_column_size(e.attachments)
                    AS content_bytes
      )
      SELECT ${sql.literal(summaryColumns("c"))}, c.priority, c.marketing_template, c.html_bytes, c.content_bytes,
             ct.subscribed AS contact_subscribed, (s.email IS NOT NULL) AS suppressed
      FROM claimed c
      LEFT JOIN contacts ct ON ct.id = c.contact_id
      LEFT JOIN suppressions s ON s.project_id = c.project_id AND s.email = c.to_email
      ORDER BY c.priority, c.id`

  /** The content of a round's small emails, in one query; empty when that fails (each is then read alone). */
  const loadSmallContents = (rows: ReadonlyArray<ClaimedRow>) =>
    rows.length === 0
      ? Effect.succeed(new Map<string, EmailContent>())
      : sql<EmailContent & { id: string }>`
          SELECT id, subject, html, headers, attachments FROM emails WHERE id = ANY(${pgArray(rows.map((row) => row.id))}::uuid[])`.pipe(
        Effect.map((found) => new Map(found.map(({ id, ...content }) => [id, content]))),
        Effect.catchCause((cause) =>
          Cause.hasInterrupts(cause)
            ? Effect.failCause(cause)
            : Effect.as(
              Effect.logWarning("reading a round's mail content failed; reading each alone", cause),
              new Map<string, EmailContent>()
            )
        )
      )

  /** One email's content, its attachments one row each (each stays far below the client's 16 MiB message limit). */
  const loadContent = Effect.fnUntraced(function*(id: string) {
    const [row] = yield* sql<Omit<EmailContent, "attachments"> & { attachment_count: number }>`
      SELECT subject, html, headers, jsonb_array_length(attachments) AS attachment_count FROM emails WHERE id = ${id}`
    if (!row) return yield* Effect.die(new Error("the email no longer exists"))
    const { attachment_count, ...content } = row
    const attachments = attachment_count === 0 ? [] : yield* sql<{ attachment: Attachment }>`
      SELECT a.value AS attachment FROM emails e, jsonb_array_elements(e.attachments) WITH ORDINALITY AS a(value, n)
      WHERE e.id = ${id} ORDER BY a.n`
    return { ...content, attachments: attachments.map((item) => item.attachment) } satisfies EmailContent
  })

  /**
   * Ends an email without sending it. A campaign's counters follow: a failure counts as failed; a
   * recipient who unsubscribed (or was suppressed) since the audience was frozen moves from the
   * recipients to the skipped.
   */
  const finish = (row: EmailRow, status: "FAILED" | "SUPPRESSED", error: string, skipped?: "unsubscribed" | "suppressed") => {
    const counter = sql.literal(
      status === "FAILED"
        ? "failed_count = failed_count + 1"
        : `skipped_${skipped ?? "suppressed"} = skipped_${skipped ?? "suppressed"} + 1, total_recipients = total_recipients - 1`
    )
    return sql`
      WITH ended AS (
        UPDATE emails SET status = ${status}, error = ${storableReason(error)} WHERE id = ${row.id} AND status = 'SENDING'
        RETURNING campaign_id
      )
      UPDATE campaigns SET ${counter} FROM ended WHERE campaigns.id = ended.campaign_id`
  }

  /** Records a round's accepted mail in one statement, with their email.sent events. */
  const markSent = (rows: ReadonlyArray<EmailRow>) =>
    sql.withTransaction(Effect.gen(function*() {
      if (rows.length === 0) return
      const updated = yield* sql<EmailRow>`
        WITH sent AS (
          UPDATE emails SET status = 'SENT', sent_at = now(), error = NULL
          WHERE id = ANY(${pgArray(rows.map((row) => row.id))}::uuid[]) AND status = 'SENDING'
          RETURNING ${sql.literal(summaryColumns())}
        ), counted AS (
          UPDATE campaigns c SET sent_count = c.sent_count + x.n
          FROM (SELECT campaign_id, count(*)::int AS n FROM sent WHERE campaign_id IS NOT NULL GROUP BY campaign_id) x
          WHERE c.id = x.campaign_id
        )
        SELECT ${sql.literal(summaryColumns())} FROM sent`
      const byProject = new Map<string, Array<EmailRow>>()
      for (const row of updated) {
        if (!row.contact_id) continue
        const list = byProject.get(row.project_id) ?? []
        list.push(row)
        byProject.set(row.project_id, list)
      }
      const now = new Date(yield* Clock.currentTimeMillis)
      for (const [projectId, sent] of byProject) {
        yield* outbox.emit(
          projectId,
          sent.map((row) => ({
            name: "email.sent",
            contactId: row.contact_id!,
            email: row.to_email,
            data: emailEventData(toEmailRecord(row)),
            at: (row.sent_at ?? now).toISOString()
          }))
        )
      }
    })).pipe(Effect.provideService(SqlClient.SqlClient, sql))

  return { claim, loadSmallContents, loadContent, finish, markSent }
}
