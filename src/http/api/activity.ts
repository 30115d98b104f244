/** The activity feed (secret key): what happened in the project, newest first, and its counts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ACTIVITY_TYPES } from "../../domain/analytics/activityTypes.ts"
import { InvalidCursor } from "../../domain/errors.ts"
import { commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const ActivityType = Schema.Literals(ACTIVITY_TYPES)

const Named = Schema.Struct({ id: Schema.String, name: Schema.NullOr(Schema.String) })

export const ActivityItem = Schema.Struct({
  id: Schema.String.annotate({
    description:
      "The event's id (email and subscription items, segment entries and exits, custom events), the contact's (contact.created) or the activity entry's"
  }),
  type: ActivityType,
  occurredAt: Timestamp,
  event: Schema.optionalKey(Schema.String).annotate({ description: "type event: the custom event's name" }),
  contact: Schema.optionalKey(Schema.Struct({ id: Schema.String, email: Schema.NullOr(Schema.String) })),
  subject: Schema.optionalKey(Schema.String),
  campaign: Schema.optionalKey(Named),
  workflow: Schema.optionalKey(Named),
  data: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "The event's data (email.clicked: link; email.bounced: bounceType; …); email.failed/suppressed: emailId, to, error; " +
      "workflow.*: executionId, status, error; campaign.*: from, to"
  })
}).annotate({ identifier: "ActivityItem" })

const typesParam = QueryParam.text(`Comma-separated types: ${ACTIVITY_TYPES.join(", ")}`)
const FeedQuery = queryParameters({
  ...cursorParams,
  types: typesParam,
  contactId: QueryParam.text("Only this contact's activity", "uuid"),
  campaignId: QueryParam.text("Only this campaign's activity", "uuid"),
  workflowId: QueryParam.text("Only this workflow's activity", "uuid"),
  from: QueryParam.dateTime("Only activity at or after this instant"),
  to: QueryParam.dateTime("Only activity before this instant"),
  search: QueryParam.text("Only activity of contacts whose email contains this text (the first 1,000 such contacts)")
})
const RangeQuery = queryParameters({
  from: QueryParam.dateTime("Start of the range (ISO 8601)"),
  to: QueryParam.dateTime("End of the range (ISO 8601), exclusive")
})
const StatsQuery = queryParameters({
  from: QueryParam.dateTime("Start of the range (ISO 8601); default 30 days before `to`"),
  to: QueryParam.dateTime("End of the range (ISO 8601), exclusive; default now")
})
const RecentQuery = queryParameters({
  since: QueryParam.dateTime("Count the items after this instant (required)"),
  types: typesParam
})
const UpcomingQuery = queryParameters({
  hours: QueryParam.integer("How far ahead; default 24", { minimum: 1, maximum: 8760, default: 24 }),
  limit: QueryParam.integer("How many; default 100, values outside 1..500 are clamped", { minimum: 1, maximum: 500, default: 100 })
})

const TypeCounts = Schema.Array(Schema.Struct({ type: ActivityType, count: Count }))
const errors = [...commonErrors, ...inputErrors] as const

export class ActivityApi extends HttpApiGroup.make("activity")
  .add(
    HttpApiEndpoint.get("feed", "/activity", {
      query: FeedQuery.fields,
      success: Schema.Struct({ data: Schema.Array(ActivityItem), cursor: Schema.NullOr(Schema.String), hasMore: Schema.Boolean }),
      error: [...errors, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(
      OpenApi.Description,
      "What happened in the project, newest first, in cursor pages: mail sent, delivered, opened, clicked, bounced, complained, " +
        "received, failed and suppressed; contacts created, subscribed and unsubscribed; segment entries and exits; workflow " +
        "executions started, finished and failed; campaign state changes; custom events."
    )
      .annotate(OpenApi.Transform, FeedQuery.document),
    HttpApiEndpoint.get("types", "/activity/types", {
      query: RangeQuery.fields,
      success: Schema.Struct({ types: TypeCounts }),
      error: errors
    }).annotate(
      OpenApi.Description,
      "Every activity type with its count (all time, or in the range given), most frequent first: the feed's type filter."
    )
      .annotate(OpenApi.Transform, RangeQuery.document),
    HttpApiEndpoint.get("stats", "/activity/stats", {
      query: StatsQuery.fields,
      success: Schema.Struct({ from: Timestamp, to: Timestamp, total: Count, byType: TypeCounts }),
      error: errors
    }).annotate(OpenApi.Description, "Activity counts per type in a range (default the last 30 days).")
      .annotate(OpenApi.Transform, StatsQuery.document),
    HttpApiEndpoint.get("recentCount", "/activity/recent-count", {
      query: RecentQuery.fields,
      success: Schema.Struct({ since: Timestamp, count: Count }),
      error: errors
    }).annotate(OpenApi.Description, 'How many feed items occurred after `since` (what a dashboard polls to show "N new").')
      .annotate(OpenApi.Transform, RecentQuery.document),
    HttpApiEndpoint.get("upcoming", "/activity/upcoming", {
      query: UpcomingQuery.fields,
      success: Schema.Struct({
        hours: Count,
        items: Schema.Array(Schema.Struct({
          type: Schema.Literals(["campaign.scheduled", "workflow.delay", "workflow.timeout"]),
          dueAt: Timestamp,
          campaign: Schema.optionalKey(Schema.Struct({ id: Schema.String, name: Schema.String })),
          workflow: Schema.optionalKey(Schema.Struct({ id: Schema.String, name: Schema.String })),
          contact: Schema.optionalKey(Schema.Struct({ id: Schema.String, email: Schema.NullOr(Schema.String) })),
          step: Schema.optionalKey(Schema.Struct({ id: Schema.String, name: Schema.String, type: Schema.String })),
          executionId: Schema.optionalKey(Schema.String)
        }))
      }),
      error: errors
    }).annotate(
      OpenApi.Description,
      "Scheduled campaigns and workflow delays and timeouts due in the next `hours`, soonest first (overdue ones too)."
    )
      .annotate(OpenApi.Transform, UpcomingQuery.document)
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Activity", description: "The project's activity feed and its counts (secret key)" }))
{}
