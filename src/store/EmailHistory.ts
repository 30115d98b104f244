/**
 * The mail a project sent, as people read it: a cursor-paged list (newest first) with filters, and one
 * email's stored content. Every email row keeps its rendered content (subject, HTML, headers,
 * attachments) as queued, which is what the sender composed the message from (each part size-capped
 * when it was made, src/mail/prepare.ts), for EMAIL_CONTENT_RETENTION_DAYS (src/mail/contentRetention.ts).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidCursor } from "../domain/errors.ts"
import { isUuid } from "../domain/ids.ts"
import { escapeLike } from "./Contacts.ts"
import { decodeTimeCursor, encodeCursor, timeKeySql } from "./cursor.ts"
import { type EmailContent, type EmailRecord, type EmailRow, type EmailStatus, summaryColumns, toEmailRecord } from "./Emails.ts"
import { iso, isoOrNull } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface EmailListQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly statuses: ReadonlyArray<EmailStatus> | undefined
  /** Part of the recipient's address (case-insensitive). */
  readonly recipient: string | undefined
  readonly templateId: string | undefined
  readonly campaignId: string | undefined
  readonly workflowId: string | undefined
  /** Created at or after (ms). */
  readonly since: number | undefined
  /** Created before (ms). */
  readonly until: number | undefined
}

export interface EmailPage {
  readonly data: ReadonlyArray<EmailRecord>
  readonly cursor: string | null
  readonly hasMore: boolean
}


export class EmailHistory extends Context.Service<EmailHistory, {
  readonly list: (projectId: string, query: EmailListQuery) => Effect.Effect<EmailPage, InvalidCursor | PersistenceError>
  /** The email with its content, or undefined when the project has no such email. */
  readonly withContent: (projectId: string, id: string) => Effect.Effect<
    {
      readonly email: EmailRecord
      readonly content: EmailContent
      /** When the content was emptied, past EMAIL_CONTENT_RETENTION_DAYS (src/mail/contentRetention.ts). */
      readonly contentExpiredAt: string | null
    } | undefined,
    PersistenceError
  >
}>()("app/store/EmailHistory") {
  static readonly layer = Layer.effect(
    EmailHistory,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const list = Effect.fn("EmailHistory.list")(function*(projectId: string, query: EmailListQuery) {
        const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor)
        if (query.cursor !== undefined && !after) return yield* InvalidCursor.of()
        const conditions = [
          sql`project_id = ${projectId}`,
          ...(after ? [sql`(created_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`] : []),
          ...(query.statuses ? [sql`status IN ${sql.in(query.statuses)}`] : []),
          ...(query.recipient ? [sql`to_email ILIKE ${`%${escapeLike(query.recipient)}%`}`] : []),
          ...(query.templateId ? [sql`template_id = ${query.templateId}`] : []),
          ...(query.campaignId ? [sql`campaign_id = ${query.campaignId}`] : []),
          ...(query.workflowId ? [sql`workflow_id = ${query.workflowId}`] : []),
          ...(query.since !== undefined ? [sql`created_at >= ${iso(query.since)}::timestamptz`] : []),
          ...(query.until !== undefined ? [sql`created_at < ${iso(query.until)}::timestamptz`] : [])
        ]
        const rows = yield* sql<EmailRow & { created_key: string }>`
          SELECT ${sql.literal(summaryColumns())}, ${sql.literal(timeKeySql("created_at"))} AS created_key FROM emails
          WHERE ${sql.and(conditions)}
          ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
        const page = rows.slice(0, query.limit)
        const hasMore = rows.length > query.limit
        const last = page.at(-1)
        return {
          data: page.map(toEmailRecord),
          cursor: hasMore && last ? encodeCursor([last.created_key, last.id]) : null,
          hasMore
        }
      }, mapSqlError)

      const withContent = Effect.fn("EmailHistory.withContent")(function*(projectId: string, id: string) {
        if (!isUuid(id)) return undefined
        const rows = yield* sql<EmailRow & EmailContent & { content_expired_at: Date | null }>`
          SELECT ${sql.literal(summaryColumns())}, html, headers, attachments, content_expired_at
          FROM emails WHERE project_id = ${projectId} AND id = ${id}`
        const row = rows[0]
        if (!row) return undefined
        // The subject as stored in full (summaryColumns cuts it to the cap, which stored rows keep anyway).
        return {
          email: toEmailRecord(row),
          content: { subject: row.subject, html: row.html, headers: row.headers, attachments: row.attachments },
          contentExpiredAt: isoOrNull(row.content_expired_at)
        }
      }, mapSqlError)

      return EmailHistory.of({ list, withContent })
    })
  )
}
