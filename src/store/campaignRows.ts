/**
 * What a campaign is: its statuses and audience types, the input it is written from, the `campaigns` row
 * as selected (its schema and columns) and the API's view of it. Apart from the repository (Campaigns.ts)
 * because fan-out and the handlers read these shapes too.
 */
import type { ProjectId } from "../domain/identifiers.ts"
import { CampaignId } from "../domain/identifiers.ts"
import { Schema } from "effect"
import type { Condition } from "../domain/conditions/types.ts"
import { isoOrNull, StoredCondition } from "./columns.ts"
import { contentColumns, contentOf, type TemplateInput } from "./Templates.ts"

export const CAMPAIGN_STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"] as const
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number]
const AUDIENCE_TYPES = ["ALL", "SEGMENT", "FILTERED"] as const
export type AudienceType = (typeof AUDIENCE_TYPES)[number]

/** A template's content, and who it goes to. */
export interface CampaignInput extends TemplateInput {
  readonly audienceType: AudienceType
  readonly segmentId: string | null
  readonly audienceCondition: Condition | null
}

export interface Campaign extends CampaignInput {
  readonly id: CampaignId
  readonly projectId: ProjectId
  readonly status: CampaignStatus
  readonly scheduledFor: string | null
  readonly totalRecipients: number
  readonly sentCount: number
  readonly deliveredCount: number
  readonly openedCount: number
  readonly clickedCount: number
  readonly bouncedCount: number
  /** Recipients who unsubscribed through a link of the campaign's mail (bounces and complaints are counted apart). */
  readonly unsubscribedCount: number
  /** Why a SENDING campaign stopped queueing mail (its monthly billing cap reached); null while it may go on. */
  readonly billingHold: string | null
  readonly sentAt: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface CampaignStats {
  readonly id: string
  readonly status: CampaignStatus
  /** The audience is frozen (every recipient known) / its mail is all queued. */
  readonly resolved: boolean
  readonly queued: boolean
  readonly totalRecipients: number
  readonly sent: number
  readonly delivered: number
  readonly opened: number
  readonly clicked: number
  readonly bounced: number
  readonly complained: number
  readonly unsubscribedCount: number
  readonly failed: number
  /** Queued or being sent right now. */
  readonly pending: number
  /** Frozen into the audience but not mailed, and why (deleted: the contact was deleted before its mail was queued). */
  readonly skipped: { readonly unsubscribed: number; readonly suppressed: number; readonly deleted: number }
  readonly rates: {
    readonly delivery: number
    readonly open: number
    readonly click: number
    readonly bounce: number
    readonly unsubscribe: number
  }
  readonly sendingStartedAt: string | null
  readonly resolvedAt: string | null
  readonly sentAt: string | null
  /** Why the service stopped the campaign (CANCELLED), when it did. */
  readonly error: string | null
}

/** A `campaigns` row as COLUMNS select it. */
export const CampaignRow = Schema.Struct({
  id: CampaignId,
  ...contentColumns,
  status: Schema.Literals(CAMPAIGN_STATUSES),
  audience_type: Schema.Literals(AUDIENCE_TYPES),
  segment_id: Schema.NullOr(Schema.String),
  audience_condition: Schema.NullOr(StoredCondition),
  scheduled_for: Schema.NullOr(Schema.Date),
  resolved: Schema.Boolean,
  queued: Schema.Boolean,
  total_recipients: Schema.Number,
  sent_count: Schema.Number,
  delivered_count: Schema.Number,
  opened_count: Schema.Number,
  clicked_count: Schema.Number,
  bounced_count: Schema.Number,
  complained_count: Schema.Number,
  unsubscribed_count: Schema.Number,
  failed_count: Schema.Number,
  skipped_unsubscribed: Schema.Number,
  skipped_suppressed: Schema.Number,
  sending_started_at: Schema.NullOr(Schema.Date),
  resolved_at: Schema.NullOr(Schema.Date),
  sent_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  error: Schema.NullOr(Schema.String),
  billing_hold: Schema.NullOr(Schema.String)
})
export type CampaignRow = typeof CampaignRow.Type

/** Campaign rows, decoded (a row that does not fit fails with SchemaError, a PersistenceError at the edge). */
export const decodeCampaignRows = Schema.decodeUnknownEffect(Schema.Array(CampaignRow))

/** The columns a CampaignRow carries, selected by name (the table has more: cursors, cancelled_at, ...). */
export const CAMPAIGN_COLUMNS = [
  "id",
  "project_id",
  "name",
  "description",
  "subject",
  "body",
  "from_email",
  "from_name",
  "reply_to",
  "type",
  "status",
  "audience_type",
  "segment_id",
  "audience_condition",
  "scheduled_for",
  "resolved",
  "queued",
  "total_recipients",
  "sent_count",
  "delivered_count",
  "opened_count",
  "clicked_count",
  "bounced_count",
  "complained_count",
  "unsubscribed_count",
  "failed_count",
  "skipped_unsubscribed",
  "skipped_suppressed",
  "sending_started_at",
  "resolved_at",
  "sent_at",
  "created_at",
  "updated_at",
  "error",
  "billing_hold"
].join(", ")

export const toCampaign = (row: CampaignRow): Campaign => ({
  id: row.id,
  ...contentOf(row),
  status: row.status,
  audienceType: row.audience_type,
  segmentId: row.segment_id,
  audienceCondition: row.audience_condition,
  scheduledFor: isoOrNull(row.scheduled_for),
  totalRecipients: row.total_recipients,
  sentCount: row.sent_count,
  deliveredCount: row.delivered_count,
  openedCount: row.opened_count,
  clickedCount: row.clicked_count,
  bouncedCount: row.bounced_count,
  unsubscribedCount: row.unsubscribed_count,
  billingHold: row.status === "SENDING" ? row.billing_hold : null,
  projectId: row.project_id,
  sentAt: isoOrNull(row.sent_at),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})
