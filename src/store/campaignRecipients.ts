/**
 * Who a campaign goes to, a page at a time, by email. Once sending started (fan-out freezes the audience),
 * the recorded recipients with the mail each got or why it was skipped; before that (a draft, a scheduled
 * campaign) the contacts it would go to if sent now: in the audience, not suppressed and, for marketing
 * mail, subscribed — what fan-out will freeze.
 */
import { Effect } from "effect"
import type { SqlClient, SqlError, Statement } from "effect/sql"

/** What the list reads of a campaign (Campaigns.ts hands its row in, with its audience as SQL). */
interface RecipientsOf {
  readonly id: string
  readonly project_id: string
  readonly status: string
  readonly type: string
}

export interface CampaignRecipient {
  readonly contactId: string
  /** null when the contact was deleted after the audience was frozen. */
  readonly email: string | null
  /** The mail's status (SENT, DELIVERED, …) or SKIPPED; null before the audience is frozen. */
  readonly status: string | null
  /** Why it was skipped (unsubscribed, suppressed, deleted, failed). */
  readonly skipped: string | null
}

export interface RecipientsPage {
  readonly frozen: boolean
  readonly data: ReadonlyArray<CampaignRecipient>
  readonly total: number
}

/** Sending started: fan-out freezes the audience into campaign_recipients (a page at a time). */
const isFrozen = (campaign: RecipientsOf) => campaign.status !== "DRAFT" && campaign.status !== "SCHEDULED"

type Row = { contact_id: string; email: string | null; status: string | null; skipped: string | null; total: number }

export const campaignRecipients = Effect.fnUntraced(function*(
  sql: SqlClient.SqlClient,
  campaign: RecipientsOf,
  /** The campaign's audience as a condition on contacts `c` (read only before the audience is frozen). */
  audience: Effect.Effect<Statement.Fragment, SqlError.SqlError>,
  page: number,
  pageSize: number
) {
  const offset = (page - 1) * pageSize
  const frozen = isFrozen(campaign)
  // Before sending: what fan-out would freeze now.
  const eligible = frozen ? undefined : sql`
    c.project_id = ${campaign.project_id} AND ${yield* audience}
    AND (${campaign.type !== "MARKETING"} OR c.subscribed)
    AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.project_id = c.project_id AND s.email = c.email)`
  const rows = eligible === undefined
    ? yield* sql<Row>`
        SELECT r.contact_id, c.email, CASE WHEN r.skipped IS NOT NULL THEN 'SKIPPED' ELSE e.status END AS status,
               r.skipped, count(*) OVER ()::int AS total
        FROM campaign_recipients r
        LEFT JOIN contacts c ON c.id = r.contact_id AND c.project_id = ${campaign.project_id}
        LEFT JOIN emails e ON e.id = r.email_id AND e.project_id = ${campaign.project_id}
        WHERE r.campaign_id = ${campaign.id}
        ORDER BY c.email NULLS LAST, r.contact_id LIMIT ${pageSize} OFFSET ${offset}`
    : yield* sql<Row>`
        SELECT c.id AS contact_id, c.email, NULL::text AS status, NULL::text AS skipped, count(*) OVER ()::int AS total
        FROM contacts c WHERE ${eligible}
        ORDER BY c.email LIMIT ${pageSize} OFFSET ${offset}`
  // A page past the end has no row to carry the total: count alone then.
  const total = rows[0]?.total ?? (page === 1 ? 0 : (yield* eligible === undefined
    ? sql<{ n: number }>`SELECT count(*)::int AS n FROM campaign_recipients WHERE campaign_id = ${campaign.id}`
    : sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts c WHERE ${eligible}`)[0]?.n ?? 0)
  return {
    frozen,
    total,
    data: rows.map((row) => ({ contactId: row.contact_id, email: row.email, status: row.status, skipped: row.skipped }))
  } satisfies RecipientsPage
})
