/**
 * The statements the send path shares with the repository: a campaign's audience as SQL, whether it
 * has anyone to send to, dropping its queued mail when it ends CANCELLED, and marking campaigns SENT
 * once their mail is out (the sender and fan-out call these with their own connection).
 */
import { Clock, Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { Condition } from "../domain/conditions/types.ts"
import { pgArray } from "../lib/pgArray.ts"
import { CAMPAIGN_COLUMNS, type CampaignRow, decodeCampaignRows } from "./campaignRows.ts"
import { compileConditionSql, segmentMembersSql } from "./conditionSql.ts"

/**
 * Ends a campaign as CANCELLED: its mail not yet handed to SMTP is dropped (FAILED with `reason`),
 * counted as failed. `error` says why when the service stopped it (its step could not run).
 */
export const dropQueuedMail = (sql: SqlClient.SqlClient, campaignId: string, reason: string, error: string | null = reason) =>
  sql`
    WITH dropped AS (
      UPDATE emails SET status = 'FAILED', error = ${reason}
      WHERE campaign_id = ${campaignId} AND status = 'PENDING'
      RETURNING id
    )
    UPDATE campaigns SET status = 'CANCELLED', cancelled_at = now(), updated_at = now(), error = ${error},
           failed_count = failed_count + (SELECT count(*) FROM dropped)
    WHERE id = ${campaignId} RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}`.pipe(Effect.flatMap(decodeCampaignRows))

/** The audience as a condition over `contacts c`. */
export const audienceOf = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, campaign: CampaignRow) {
  switch (campaign.audience_type) {
    case "ALL":
      return sql.literal("TRUE")
    case "FILTERED":
      return compileConditionSql(sql, campaign.audience_condition as Condition, yield* Clock.currentTimeMillis)
    case "SEGMENT": {
      const [segment] = yield* sql<{ id: string; type: string; condition: Condition | null }>`
        SELECT id, type, condition FROM segments WHERE id = ${campaign.segment_id} AND project_id = ${campaign.project_id}`
      if (!segment) return sql.literal("FALSE")
      return segmentMembersSql(sql, segment, yield* Clock.currentTimeMillis)
    }
  }
})

/**
 * Whether any contact would get the campaign's mail now: in its audience, not suppressed and, for a
 * MARKETING campaign, subscribed (what fan-out freezes as eligible). Stops at the first one.
 */
export const hasRecipients = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, campaign: CampaignRow) {
  const audience = yield* audienceOf(sql, campaign)
  const [row] = yield* sql<{ found: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM contacts c
      WHERE c.project_id = ${campaign.project_id} AND ${audience}
        AND (${campaign.type !== "MARKETING"} OR c.subscribed)
        AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.project_id = c.project_id AND s.email = c.email)
    ) AS found`
  return row?.found === true
})

/** Marks SENDING campaigns SENT once all their mail is queued and none is still open. */
export const completeCampaigns = (sql: SqlClient.SqlClient, campaignIds: ReadonlyArray<string>) =>
  campaignIds.length === 0
    ? Effect.void
    : sql`
        UPDATE campaigns c SET status = 'SENT', sent_at = now(), updated_at = now()
        WHERE c.id = ANY(${pgArray(campaignIds)}::uuid[]) AND c.status = 'SENDING' AND c.queued
          AND NOT EXISTS (SELECT 1 FROM emails e WHERE e.campaign_id = c.id AND e.status IN ('PENDING', 'SENDING'))`.pipe(Effect.asVoid)
