/**
 * Email records. A PENDING row is queued mail: it is written in the transaction of the request (or
 * step) that caused it, together with an `email` message into the project's partition of stream IN,
 * which wakes the partition's worker to send it (src/mail/Sender.ts). Status only moves forward.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { EmailDirection, EmailStatus } from "../domain/email.ts"
import { isUuid } from "../domain/ids.ts"
import { Outbox } from "../stream/Outbox.ts"
import { isoOrNull } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export type EmailType = "TRANSACTIONAL" | "MARKETING"

/** Forward order of the statuses after sending; FAILED and SUPPRESSED are final. */
export const STATUS_ORDER = ["PENDING", "SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED"] as const
export type { EmailStatus }

export interface Attachment {
  readonly filename: string
  /** Base64. */
  readonly content: string
  readonly contentType?: string | undefined
  /** The part's Content-ID (without angle brackets): the body shows it through `cid:<contentId>`. */
  readonly contentId?: string | undefined
  /** Set with a contentId: `inline` parts are shown in the body, sent beside the HTML in multipart/related. */
  readonly disposition?: "attachment" | "inline" | undefined
}

export interface NewEmail {
  readonly id: string
  readonly projectId: string
  readonly contactId: string | null
  readonly to: string
  readonly toName: string | null
  readonly from: string
  readonly fromName: string | null
  readonly replyTo: string | null
  readonly subject: string
  readonly html: string
  readonly headers: Readonly<Record<string, string>>
  readonly attachments: ReadonlyArray<Attachment>
  readonly type: EmailType
  /**
   * Transactional mail made from a MARKETING template (/v1/send): like marketing mail, the sender holds
   * it back (SUPPRESSED) from a contact who unsubscribed after it was queued.
   */
  readonly marketingTemplate?: boolean
  readonly templateId: string | null
  readonly campaignId: string | null
  readonly workflowId: string | null
  readonly messageId: string
  /** The monthly cap it counts against when not the one its campaign or workflow implies (a campaign's test send). */
  readonly billingCategory?: "campaigns"
}

/** The content of a queued email: read one email at a time, only by the sender (src/mail/Sender.ts). */
export type EmailContent = Pick<NewEmail, "subject" | "html" | "headers" | "attachments">

/** An email without its content (html, headers, attachments): what the api, events and counters read. */
export interface EmailRecord extends Omit<NewEmail, "html" | "headers" | "attachments" | "marketingTemplate"> {
  readonly status: EmailStatus
  /** Received mail is `inbound` (status RECEIVED). */
  readonly direction: EmailDirection
  /** Received mail: the email of ours it answers (In-Reply-To / References). */
  readonly inReplyTo: string | null
  readonly attempts: number
  readonly error: string | null
  readonly createdAt: string
  readonly sentAt: string | null
  readonly deliveredAt: string | null
  readonly openedAt: string | null
  readonly clickedAt: string | null
  readonly bouncedAt: string | null
  readonly complainedAt: string | null
}

export interface EmailRow {
  readonly id: string
  readonly project_id: string
  readonly partition: number
  readonly contact_id: string | null
  readonly to_email: string
  readonly to_name: string | null
  readonly from_email: string
  readonly from_name: string | null
  readonly reply_to: string | null
  readonly subject: string
  readonly type: EmailType
  readonly template_id: string | null
  readonly campaign_id: string | null
  readonly workflow_id: string | null
  readonly message_id: string
  readonly status: EmailStatus
  readonly direction: EmailDirection
  readonly in_reply_to_email_id: string | null
  readonly attempts: number
  readonly error: string | null
  readonly created_at: Date
  readonly sent_at: Date | null
  readonly delivered_at: Date | null
  readonly opened_at: Date | null
  readonly clicked_at: Date | null
  readonly bounced_at: Date | null
  readonly complained_at: Date | null
}

/**
 * Every column but the content, for reads that return whole rows. A row's content can be large (and
 * a row written before the size caps, larger than the client reads in one message), so only the
 * sender reads it, one email at a time. The subject is cut to its cap for the same reason.
 */
export const summaryColumns = (alias?: string) => {
  const column = (name: string) => (alias ? `${alias}.${name}` : name)
  return [
    "id",
    "project_id",
    "partition",
    "contact_id",
    "to_email",
    "to_name",
    "from_email",
    "from_name",
    "reply_to",
    "type",
    "template_id",
    "campaign_id",
    "workflow_id",
    "message_id",
    "status",
    "attempts",
    "error",
    "created_at",
    "sent_at",
    "delivered_at",
    "opened_at",
    "clicked_at",
    "bounced_at",
    "complained_at",
    "direction",
    "in_reply_to_email_id"
  ].map(column).concat(`left(${column("subject")}, 998) AS subject`).join(", ")
}

export const toEmailRecord = (row: EmailRow): EmailRecord => ({
  id: row.id,
  projectId: row.project_id,
  contactId: row.contact_id,
  to: row.to_email,
  toName: row.to_name,
  from: row.from_email,
  fromName: row.from_name,
  replyTo: row.reply_to,
  subject: row.subject,
  type: row.type,
  templateId: row.template_id,
  campaignId: row.campaign_id,
  workflowId: row.workflow_id,
  messageId: row.message_id,
  status: row.status,
  direction: row.direction,
  inReplyTo: row.in_reply_to_email_id,
  attempts: row.attempts,
  error: row.error,
  createdAt: row.created_at.toISOString(),
  sentAt: isoOrNull(row.sent_at),
  deliveredAt: isoOrNull(row.delivered_at),
  openedAt: isoOrNull(row.opened_at),
  clickedAt: isoOrNull(row.clicked_at),
  bouncedAt: isoOrNull(row.bounced_at),
  complainedAt: isoOrNull(row.complained_at)
})

/** Engagement reported after sending, with the event each emits and the column it stamps. */
export const ENGAGEMENT = {
  delivery: { status: "DELIVERED", event: "email.delivery", column: "delivered_at", counter: "delivered_count" },
  open: { status: "OPENED", event: "email.open", column: "opened_at", counter: "opened_count" },
  click: { status: "CLICKED", event: "email.click", column: "clicked_at", counter: "clicked_count" },
  bounce: { status: "BOUNCED", event: "email.bounce", column: "bounced_at", counter: "bounced_count" },
  complaint: { status: "COMPLAINED", event: "email.complaint", column: "complained_at", counter: "complained_count" }
} as const
export type EngagementKind = keyof typeof ENGAGEMENT

/**
 * Repeated opens of one email collapse: the first pixel fetch records `email.open`, and a later one
 * records another only when this long has passed since the last recorded open. Mail proxies and
 * privacy features (Apple Mail Privacy Protection, Gmail's image proxy, security scanners) fetch the
 * pixel on delivery and again at will, and a reader scrolling back fetches it anew; each fetch would
 * otherwise be an event able to start workflows and count towards `triggeredAtLeast` segments.
 */
export const OPEN_REPEAT_MINUTES = 60

export interface EngagementResult {
  readonly email: EmailRecord
  /** The first engagement of this kind for the email (the column was empty). */
  readonly first: boolean
  /** Whether its email.* event was emitted (a collapsed repeat open emits none). */
  readonly recorded: boolean
}

/** The data every email.* event carries, per api-shapes. */
export const emailEventData = (email: EmailRecord, extra: Record<string, unknown> = {}) => ({
  emailId: email.id,
  subject: email.subject,
  ...(email.campaignId ? { campaignId: email.campaignId } : {}),
  ...(email.templateId ? { templateId: email.templateId } : {}),
  ...(email.workflowId ? { workflowId: email.workflowId } : {}),
  ...extra
})

/**
 * Inserts PENDING emails and the `email` message that wakes the partition's sender; call inside the
 * transaction that causes them. Campaign and workflow mail queues behind transactional mail.
 */
/**
 * Inserts queued mail (PENDING) on `partition`, where the project's sender runs; call inside the
 * transaction that causes it. The MailQueue (src/mail/MailQueue.ts) adds the wake-up message.
 */
export const insertQueuedEmails = (
  sql: SqlClient.SqlClient,
  projectId: string,
  partition: number,
  emails: ReadonlyArray<NewEmail>
) =>
  Effect.gen(function*() {
    if (emails.length === 0) return
    const rows = emails.map((email) => ({
      ...email,
      priority: email.type === "TRANSACTIONAL" && !email.campaignId && !email.workflowId ? 0 : 1,
      marketingTemplate: email.marketingTemplate === true,
      partition
    }))
    yield* sql`
      INSERT INTO emails (id, project_id, partition, contact_id, to_email, to_name, from_email, from_name, reply_to,
                          subject, html, headers, attachments, type, marketing_template, priority, template_id,
                          campaign_id, workflow_id, message_id, billing_category)
      SELECT x.id, ${projectId}, x.partition, x."contactId", x."to", x."toName", x."from", x."fromName",
             x."replyTo", x.subject, x.html, x.headers, x.attachments, x.type, x."marketingTemplate", x.priority,
             x."templateId", x."campaignId", x."workflowId", x."messageId", x."billingCategory"
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(
        id uuid, partition int, "contactId" uuid, "to" text, "toName" text, "from" text, "fromName" text,
        "replyTo" text, subject text, html text, headers jsonb, attachments jsonb, type text, "marketingTemplate" boolean,
        priority smallint, "templateId" uuid, "campaignId" uuid, "workflowId" uuid, "messageId" text, "billingCategory" text)`
  })

export class Emails extends Context.Service<Emails, {
  readonly get: (projectId: string, id: string) => Effect.Effect<EmailRecord | undefined, PersistenceError>
  /** By id alone, for tracking links that carry only the (signed) id; callers verify the signature. */
  readonly byId: (id: string) => Effect.Effect<EmailRecord | undefined, PersistenceError>
  /** By Message-ID, within one project (inbound notifications that name the project) or any. */
  readonly byMessageId: (messageId: string, projectId?: string) => Effect.Effect<EmailRecord | undefined, PersistenceError>
  /**
   * Records an engagement: stamps its time once, moves the status forward (never back) and emits the
   * email.* event (every click; opens at most once per OPEN_REPEAT_MINUTES; once for the others).
   */
  readonly engage: (
    email: EmailRecord,
    kind: EngagementKind,
    data?: Record<string, unknown>
  ) => Effect.Effect<EngagementResult | undefined, PersistenceError>
  /**
   * Emits an engagement's email.* event without recording the engagement: no stamp, no status, no
   * counter (a transient bounce is told to workflows and segments, but the email was not bounced).
   */
  readonly notify: (email: EmailRecord, kind: EngagementKind, data?: Record<string, unknown>) => Effect.Effect<void, PersistenceError>
  /** The project mail was sent in to this contact id: emails outlive their contact (the links of a deleted contact). */
  readonly projectOfContact: (contactId: string) => Effect.Effect<string | undefined, PersistenceError>
}>()("app/store/Emails") {
  static readonly layer = Layer.effect(
    Emails,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox

      const get = Effect.fn("Emails.get")(function*(projectId: string, id: string) {
        const rows = yield* sql<EmailRow>`SELECT ${
          sql.literal(summaryColumns())
        } FROM emails WHERE project_id = ${projectId} AND id = ${id}`
        return rows[0] ? toEmailRecord(rows[0]) : undefined
      }, mapSqlError)

      const byId = Effect.fn("Emails.byId")(function*(id: string) {
        if (!isUuid(id)) return undefined
        const rows = yield* sql<EmailRow>`SELECT ${sql.literal(summaryColumns())} FROM emails WHERE id = ${id}`
        return rows[0] ? toEmailRecord(rows[0]) : undefined
      }, mapSqlError)

      const byMessageId = Effect.fn("Emails.byMessageId")(function*(messageId: string, projectId?: string) {
        const id = messageId.trim().replace(/^<|>$/g, "")
        const rows = yield* sql<EmailRow>`
          SELECT ${sql.literal(summaryColumns())} FROM emails
          WHERE message_id = ${id} ${projectId ? sql`AND project_id = ${projectId}` : sql``}`
        return rows[0] ? toEmailRecord(rows[0]) : undefined
      }, mapSqlError)

      const engage = Effect.fn("Emails.engage")(function*(email: EmailRecord, kind: EngagementKind, data: Record<string, unknown> = {}) {
        const step = ENGAGEMENT[kind]
        return yield* sql.withTransaction(Effect.gen(function*() {
          // array_position counts from 1: a status moves forward when its position is below the new one's.
          const rank = STATUS_ORDER.indexOf(step.status)
          // The row lock orders concurrent fetches, from any api process: one of them records the open.
          const openDue = sql`(open_recorded_at IS NULL OR open_recorded_at <= now() - make_interval(mins => ${OPEN_REPEAT_MINUTES}))`
          const rows = yield* sql<EmailRow & { first: boolean; open_due: boolean }>`
            UPDATE emails e SET
              ${sql.literal(step.column)} = COALESCE(e.${sql.literal(step.column)}, now()),
              ${kind === "open" ? sql`open_recorded_at = CASE WHEN old.open_due THEN now() ELSE e.open_recorded_at END,` : sql``}
              status = CASE
                WHEN array_position(${sql.literal(`ARRAY['${STATUS_ORDER.join("','")}']`)}, e.status) < ${rank + 1}
                THEN ${step.status} ELSE e.status END
            FROM (SELECT id, ${sql.literal(step.column)} IS NULL AS first, ${openDue} AS open_due
                  FROM emails WHERE id = ${email.id} FOR UPDATE) old
            WHERE e.id = old.id
            RETURNING ${sql.literal(summaryColumns("e"))}, old.first, old.open_due`
          const row = rows[0]
          if (!row) return undefined
          const first = row.first
          // A campaign counts each email once per kind of engagement.
          if (first && row.campaign_id) {
            yield* sql`UPDATE campaigns SET ${sql.literal(`${step.counter} = ${step.counter} + 1`)} WHERE id = ${row.campaign_id}`
          }
          const recorded = kind === "click" || (kind === "open" ? row.open_due : first)
          if (row.contact_id && recorded) {
            yield* outbox.emit(row.project_id, [{
              name: step.event,
              contactId: row.contact_id,
              email: row.to_email,
              data: emailEventData(toEmailRecord(row), kind === "click" ? { ...data, isFirstClick: first } : data),
              at: new Date(yield* Clock.currentTimeMillis).toISOString()
            }])
          }
          return { email: toEmailRecord(row), first, recorded }
        })).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      }, mapSqlError)

      const notify = Effect.fn("Emails.notify")(function*(email: EmailRecord, kind: EngagementKind, data: Record<string, unknown> = {}) {
        if (!email.contactId) return
        yield* outbox.emit(email.projectId, [{
          name: ENGAGEMENT[kind].event,
          contactId: email.contactId,
          email: email.to,
          data: emailEventData(email, data),
          at: new Date(yield* Clock.currentTimeMillis).toISOString()
        }])
      }, mapSqlError)

      const projectOfContact = Effect.fn("Emails.projectOfContact")(function*(contactId: string) {
        if (!isUuid(contactId)) return undefined
        const rows = yield* sql<{ project_id: string }>`SELECT project_id FROM emails WHERE contact_id = ${contactId} LIMIT 1`
        return rows[0]?.project_id
      }, mapSqlError)

      return Emails.of({ get, byId, byMessageId, engage, notify, projectOfContact })
    })
  )
}
