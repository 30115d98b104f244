/**
 * Campaign fan-out, one step per `campaignStep` command, run by the project's actor inside its batch
 * transaction (so a redelivered command does nothing twice, and the project's other messages
 * interleave with a long campaign).
 *
 * 1. Resolve: the audience (ALL, a segment's members, or the FILTERED condition compiled to SQL) is
 *    frozen into `campaign_recipients` in keyset pages of contact ids. Marketing campaigns skip
 *    unsubscribed contacts, every campaign skips suppressed addresses; both are counted.
 * 2. Queue: recipients get their rendered email (PENDING, campaign priority, behind transactional mail)
 *    in pages, each step committing the next command until all are queued.
 * The sender sends them under the project's throttle; the campaign is SENT once none is left open.
 *
 * Billing caps: each queue step takes only what the month's `campaigns` cap still allows (Billing's
 * allowance, locked until the batch commits). When it falls short the step queues what fits, leaves the
 * cursor before the first recipient left out, records why on the campaign (`billing_hold`) and commits
 * no next step: the campaign waits, costing nothing, until src/billing/heldMail.ts resumes it (the cap
 * raised, room freed, or the month turned). A step that gets all it asked for clears the hold.
 *
 * A recipient whose mail cannot be made (the template fails on their data, or the mail breaks a size
 * cap) is recorded failed with the reason and counted; the campaign moves on. A step that cannot run
 * at all (the content no longer compiles, the audience no longer evaluates) stops the campaign —
 * CANCELLED, with the reason — rather than failing the project's batch again and again.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { isolateRow, reasonOf } from "../lib/isolation.ts"
import { pgArray } from "../lib/pgArray.ts"
import type { MailQueue } from "../mail/MailQueue.ts"
import { makeRenderer } from "../mail/render.ts"
import { type Billing, holdReason } from "../store/Billing.ts"
import { CAMPAIGN_COLUMNS, CampaignRow } from "../store/campaignRows.ts"
import { audienceOf, completeCampaigns, dropQueuedMail } from "../store/campaignSending.ts"
import { mapSqlError } from "../store/PersistenceError.ts"
import type { Outbox } from "../stream/Outbox.ts"

/** Contacts frozen into the audience per step (ids only: cheap). */
export const RESOLVE_PAGE = 5_000
/** Emails rendered and queued per step (bounded work inside one actor transaction). */
export const QUEUE_PAGE = 500

const renderer = makeRenderer()

export interface FanoutContext {
  readonly projectId: string
  readonly outbox: Outbox["Service"]
  readonly mail: MailQueue["Service"]
  readonly billing: Billing["Service"]
}

export interface StepOutcome {
  /** Emails queued by this step. */
  readonly queued: number
  /** Another step was committed (the outbox must be relayed). */
  readonly continued: boolean
}

const FIRST_ID = "00000000-0000-0000-0000-000000000000"

/** A campaign as a step reads it: its row and where resolving and queueing stopped. */
const SteppedRow = Schema.Struct({
  ...CampaignRow.fields,
  resolve_cursor: Schema.NullOr(Schema.String),
  queue_cursor: Schema.NullOr(Schema.String)
})
const decodeSteppedRows = Schema.decodeUnknownEffect(Schema.Array(SteppedRow))

export const campaignStep = Effect.fnUntraced(function*(context: FanoutContext, campaignId: string) {
  const sql = yield* SqlClient.SqlClient
  // Locked: a concurrent cancel waits for this step, and then drops what it queued.
  const [campaign] = yield* sql`
    SELECT ${sql.literal(CAMPAIGN_COLUMNS)}, resolve_cursor, queue_cursor
    FROM campaigns WHERE id = ${campaignId} AND project_id = ${context.projectId} FOR UPDATE`.pipe(
    Effect.flatMap(decodeSteppedRows),
    mapSqlError
  )
  if (!campaign || campaign.status !== "SENDING") return { queued: 0, continued: false }

  // In a savepoint of the actor's transaction: a step that fails on its own is undone, and the campaign stops.
  const step = Effect.gen(function*() {
    if (!campaign.resolved) yield* resolvePage(sql, campaign)
    else if (!campaign.queued) return yield* queuePage(sql, context, campaign)
    return { queued: 0, held: false }
  })
  const page = yield* isolateRow(
    "campaign fan-out",
    { projectId: context.projectId, campaignId },
    sql.withTransaction(step),
    (reason) => dropQueuedMail(sql, campaignId, `the campaign stopped: ${reason}`)
  )
  if (page === undefined) return { queued: 0, continued: false }
  const { queued } = page
  // Held at its billing cap: no next step until it is resumed.
  if (page.held) return { queued, continued: false }

  const [after] = yield* sql<{ resolved: boolean; queued: boolean }>`SELECT resolved, queued FROM campaigns WHERE id = ${campaignId}`
  if (after && !after.queued) {
    yield* context.outbox.append([{ kind: "command", projectId: context.projectId, commandId: uuidv7(), type: "campaignStep", campaignId }])
    return { queued, continued: true }
  }
  yield* completeCampaigns(sql, [campaignId])
  return { queued, continued: false }
})

const resolvePage = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, campaign: CampaignRow & { resolve_cursor: string | null }) {
  const audience = yield* audienceOf(sql, campaign)
  const marketing = campaign.type === "MARKETING"
  const [page] = yield* sql<{ n: number; last: string | null; eligible: number; unsubscribed: number; suppressed: number }>`
    WITH chunk AS (
      SELECT c.id,
             CASE WHEN s.email IS NOT NULL THEN 'suppressed'
                  WHEN ${marketing} AND NOT c.subscribed THEN 'unsubscribed' END AS skipped
      FROM contacts c
      LEFT JOIN suppressions s ON s.project_id = c.project_id AND s.email = c.email
      WHERE c.project_id = ${campaign.project_id} AND c.id > ${campaign.resolve_cursor ?? FIRST_ID}::uuid AND ${audience}
      ORDER BY c.id
      LIMIT ${RESOLVE_PAGE}
    ), frozen AS (
      INSERT INTO campaign_recipients (campaign_id, contact_id, skipped)
      SELECT ${campaign.id}, id, skipped FROM chunk
      ON CONFLICT DO NOTHING
    )
    SELECT count(*)::int AS n, max(id::text) AS last,
           count(*) FILTER (WHERE skipped IS NULL)::int AS eligible,
           count(*) FILTER (WHERE skipped = 'unsubscribed')::int AS unsubscribed,
           count(*) FILTER (WHERE skipped = 'suppressed')::int AS suppressed
    FROM chunk`
  const done = (page?.n ?? 0) < RESOLVE_PAGE
  yield* sql`
    UPDATE campaigns SET
      resolve_cursor = COALESCE(${page?.last ?? null}::uuid, resolve_cursor),
      total_recipients = total_recipients + ${page?.eligible ?? 0},
      skipped_unsubscribed = skipped_unsubscribed + ${page?.unsubscribed ?? 0},
      skipped_suppressed = skipped_suppressed + ${page?.suppressed ?? 0},
      resolved = ${done},
      resolved_at = CASE WHEN ${done} THEN now() ELSE NULL END,
      updated_at = now()
    WHERE id = ${campaign.id}`
})

const queuePage = Effect.fnUntraced(function*(
  sql: SqlClient.SqlClient,
  context: FanoutContext,
  campaign: CampaignRow & { queue_cursor: string | null }
) {
  const recipients = yield* sql<{ contact_id: string; email: string | null; data: Record<string, unknown> | null }>`
    SELECT r.contact_id, c.email, c.data
    FROM campaign_recipients r
    LEFT JOIN contacts c ON c.id = r.contact_id
    WHERE r.campaign_id = ${campaign.id} AND r.skipped IS NULL AND r.contact_id > ${campaign.queue_cursor ?? FIRST_ID}::uuid
    ORDER BY r.contact_id
    LIMIT ${QUEUE_PAGE}`
  const mail = yield* context.mail.forProject(campaign.project_id)
  const content = {
    subject: renderer.compile(campaign.subject, "text"),
    body: renderer.compile(campaign.body, "html"),
    from: campaign.from_email,
    fromName: campaign.from_name,
    replyTo: campaign.reply_to,
    headers: {},
    attachments: [],
    type: campaign.type === "MARKETING" ? "MARKETING" as const : "TRANSACTIONAL" as const,
    templateId: null,
    campaignId: campaign.id
  }
  const { page, hold } = yield* withinCap(context, campaign.project_id, recipients)
  const present = page.filter((recipient) => recipient.email !== null)
  // A contact deleted since the audience was frozen gets no mail and leaves the count.
  const gone = page.filter((recipient) => recipient.email === null).map((recipient) => recipient.contact_id)
  // A recipient whose mail cannot be made (the template fails on their data, a size cap) gets none; the rest go on.
  const failed: Array<{ contact_id: string; reason: string }> = []
  const rendered = yield* Effect.forEach(
    present,
    (recipient) =>
      mail.render(content, { contactId: recipient.contact_id, email: recipient.email!, name: null, data: recipient.data ?? {} }).pipe(
        Effect.catch((error) => Effect.sync(() => void failed.push({ contact_id: recipient.contact_id, reason: reasonOf(error) })))
      )
  )
  const emails = rendered.filter((email) => email !== undefined)
  if (failed.length > 0) {
    yield* sql`
      UPDATE campaign_recipients r SET skipped = 'failed', error = x.reason
      FROM jsonb_to_recordset(${JSON.stringify(failed)}::jsonb) AS x(contact_id uuid, reason text)
      WHERE r.campaign_id = ${campaign.id} AND r.contact_id = x.contact_id`
    yield* sql`UPDATE campaigns SET failed_count = failed_count + ${failed.length} WHERE id = ${campaign.id}`
  }
  yield* context.mail.queue(campaign.project_id, emails)
  if (emails.length > 0) {
    yield* sql`
      UPDATE campaign_recipients r SET email_id = x.email_id
      FROM jsonb_to_recordset(${JSON.stringify(emails.map((email) => ({ contact_id: email.contactId, email_id: email.id })))}::jsonb)
        AS x(contact_id uuid, email_id uuid)
      WHERE r.campaign_id = ${campaign.id} AND r.contact_id = x.contact_id`
  }
  if (gone.length > 0) {
    yield* sql`UPDATE campaign_recipients SET skipped = 'deleted'
               WHERE campaign_id = ${campaign.id} AND contact_id = ANY(${pgArray(gone)}::uuid[])`
  }
  const done = hold === null && recipients.length < QUEUE_PAGE
  yield* sql`
    UPDATE campaigns SET
      queue_cursor = COALESCE(${page.at(-1)?.contact_id ?? null}::uuid, queue_cursor),
      total_recipients = total_recipients - ${gone.length},
      queued = ${done},
      billing_hold = ${hold},
      updated_at = now()
    WHERE id = ${campaign.id}`
  return { queued: emails.length, held: hold !== null }
})

/**
 * The part of a page the month's `campaigns` cap lets through: every recipient before the first one
 * with an address that does not fit (deleted contacts cost nothing), and the hold's reason when some
 * do not fit (null otherwise).
 */
const withinCap = Effect.fnUntraced(function*<R extends { readonly email: string | null }>(
  context: FanoutContext,
  projectId: string,
  recipients: ReadonlyArray<R>
) {
  const mailable = recipients.filter((recipient) => recipient.email !== null)
  const room = mailable.length === 0 ? null : yield* context.billing.allowance(projectId, "campaigns")
  if (room === null || room.remaining >= mailable.length) return { page: recipients, hold: null }
  const firstLeftOut = recipients.indexOf(mailable[room.remaining]!)
  return { page: recipients.slice(0, firstLeftOut), hold: holdReason("campaigns", room.limit) }
})
