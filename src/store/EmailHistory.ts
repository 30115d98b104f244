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
import { escapeLike } from "./pagedList.ts"
import { decodeTimeCursor, encodeCursor, timeKeySql } from "./cursor.ts"
import type { AuthenticationResults, EmailDirection } from "../domain/email.ts"
import { type Attachment, type EmailRecord, type EmailRow, type EmailStatus, summaryColumns, toEmailRecord } from "./Emails.ts"
import { iso, isoOrNull } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface EmailListQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly statuses: ReadonlyArray<EmailStatus> | undefined
  readonly direction?: EmailDirection | undefined
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

export interface AttachmentSummary {
  readonly filename: string
  readonly contentType: string | null
  /** Set for a part the body shows through `cid:` (src/http/handlers/sendAttachments.ts). */
  readonly contentId: string | null
  readonly disposition: "attachment" | "inline"
  /** Its content's length as stored (base64). */
  readonly storedBytes: number
  /** Its size decoded. */
  readonly size: number
}

export interface EmailDetail {
  readonly email: EmailRecord
  /** Null when over maxHtmlBytes (a row stored before the caps): not read. */
  readonly html: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly attachments: ReadonlyArray<AttachmentSummary>
  /** When the content was emptied, past EMAIL_CONTENT_RETENTION_DAYS (src/mail/contentRetention.ts). */
  readonly contentExpiredAt: string | null
  /** Received mail: SPF, DKIM and DMARC on arrival. */
  readonly authentication: AuthenticationResults | null
  /** Received mail: the head of the message as received (its header lines), when kept. */
  readonly receivedHead: Buffer | null
}

/** bytea comes back as a Uint8Array. */
const asBuffer = (bytes: Uint8Array | null) => (bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))

export interface EmailPage {
  readonly data: ReadonlyArray<EmailRecord>
  readonly cursor: string | null
  readonly hasMore: boolean
}

export class EmailHistory extends Context.Service<EmailHistory, {
  readonly list: (projectId: string, query: EmailListQuery) => Effect.Effect<EmailPage, InvalidCursor | PersistenceError>
  /** The email with its content but the attachments' (their names and sizes only), or undefined when the project has none such. */
  readonly detail: (projectId: string, id: string, maxHtmlBytes: number) => Effect.Effect<EmailDetail | undefined, PersistenceError>
  /** The email's attachments with their content, read one at a time (for the raw message). */
  readonly attachments: (projectId: string, id: string, count: number) => Effect.Effect<ReadonlyArray<Attachment>, PersistenceError>
  /** Received mail as it arrived, while its content is kept; undefined otherwise. */
  readonly received: (projectId: string, id: string) => Effect.Effect<Buffer | undefined, PersistenceError>
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
          ...(query.direction ? [sql`direction = ${query.direction}`] : []),
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

      const detail = Effect.fn("EmailHistory.detail")(function*(projectId: string, id: string, maxHtmlBytes: number) {
        if (!isUuid(id)) return undefined
        // Everything but the attachments' content; an HTML body over the cap (a row stored before the caps) is not read.
        const rows = yield* sql<
          EmailRow & {
            html: string | null
            headers: Readonly<Record<string, string>>
            attachment_list: ReadonlyArray<AttachmentSummary>
            content_expired_at: Date | null
            auth_results: AuthenticationResults | null
            raw_head: Uint8Array | null
          }
        >`
          SELECT ${sql.literal(summaryColumns("e"))},
                 CASE WHEN octet_length(e.html) <= ${maxHtmlBytes} THEN e.html END AS html, e.headers, e.content_expired_at,
                 e.auth_results, substring(e.raw_message from 1 for 65536) AS raw_head,
                 COALESCE((SELECT jsonb_agg(jsonb_build_object('filename', a.value->>'filename', 'contentType', a.value->>'contentType',
                                                               'contentId', a.value->>'contentId',
                                                               'disposition', COALESCE(a.value->>'disposition', 'attachment'),
                                                               'storedBytes', octet_length(a.value->>'content'),
                                                               'size', octet_length(a.value->>'content') * 3 / 4
                                                                 - (octet_length(a.value->>'content') - octet_length(rtrim(a.value->>'content', '=')))) ORDER BY a.n)
                           FROM jsonb_array_elements(e.attachments) WITH ORDINALITY AS a(value, n)), '[]'::jsonb) AS attachment_list
          FROM emails e WHERE e.project_id = ${projectId} AND e.id = ${id}`
        const row = rows[0]
        if (!row) return undefined
        return {
          email: toEmailRecord(row),
          html: row.html,
          headers: row.headers,
          attachments: row.attachment_list,
          contentExpiredAt: isoOrNull(row.content_expired_at),
          authentication: row.auth_results,
          receivedHead: asBuffer(row.raw_head)
        }
      }, mapSqlError)

      // One attachment per query, as the sender reads them: each stays below the client's message limit.
      const attachments = Effect.fn("EmailHistory.attachments")(function*(projectId: string, id: string, count: number) {
        const read: Array<Attachment> = []
        for (let n = 1; n <= count; n++) {
          const [row] = yield* sql<{ attachment: Attachment }>`
            SELECT a.value AS attachment FROM emails e, jsonb_array_elements(e.attachments) WITH ORDINALITY AS a(value, n)
            WHERE e.project_id = ${projectId} AND e.id = ${id} AND a.n = ${n}`
          if (row) read.push(row.attachment)
        }
        return read
      }, mapSqlError)

      const received = Effect.fn("EmailHistory.received")(function*(projectId: string, id: string) {
        if (!isUuid(id)) return undefined
        const [row] = yield* sql<{ raw_message: Uint8Array | null }>`
          SELECT raw_message FROM emails WHERE project_id = ${projectId} AND id = ${id} AND direction = 'inbound'`
        return asBuffer(row?.raw_message ?? null) ?? undefined
      }, mapSqlError)

      return EmailHistory.of({ list, detail, attachments, received })
    })
  )
}
