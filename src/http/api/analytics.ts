/** Analytics (secret key): email and audience figures answered from rollups (src/store/Analytics.ts). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { MAX_RANGE_DAYS, STREAMS } from "../../domain/analytics/range.ts"
import { commonErrors, ErrorDocs, inputErrors } from "./errors.ts"
import { QueryParam, queryParameters } from "./query.ts"
import { Count, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const rangeParams = {
  from: QueryParam.dateTime(
    "Start of the range (ISO 8601); default 30 days before `to`. Widened to the start of its local day (hour when the range is at most 2 days)"
  ),
  to: QueryParam.dateTime(
    `End of the range (ISO 8601); default now; at most ${MAX_RANGE_DAYS} days after \`from\`. Widened to the end of its local day (hour)`
  ),
  tz: QueryParam.text("IANA time zone the buckets are local days and hours of (Asia/Kolkata, America/New_York); default UTC"),
  stream: QueryParam.literals(STREAMS, "Which mail: ALL, TRANSACTIONAL (/v1/send), CAMPAIGN, WORKFLOW; default ALL", "ALL")
}
const limitParam = (fallback: number, max: number) =>
  QueryParam.integer(`How many; default ${fallback}, values outside 1..${max} are clamped`, { minimum: 1, maximum: max, default: fallback })

const Rate = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: "A share from 0 to 1 (0 when the base is 0)" })
const Rates = Schema.Struct({
  deliveryRate: Rate.annotate({ description: "delivered / sent" }),
  openRate: Rate.annotate({ description: "unique opens / sent" }),
  clickRate: Rate.annotate({ description: "unique clicks / sent" }),
  clickToOpenRate: Rate.annotate({ description: "unique clicks / unique opens" }),
  bounceRate: Rate.annotate({ description: "bounced / sent" }),
  complaintRate: Rate.annotate({ description: "complained / sent" }),
  unsubscribeRate: Rate.annotate({ description: "unsubscribes attributed to the mail / sent" })
}).annotate({ identifier: "AnalyticsRates" })

const Metrics = {
  sent: Count,
  delivered: Count,
  opened: Count.annotate({ description: "Unique opens: emails opened at least once" }),
  clicked: Count.annotate({ description: "Unique clicks: emails clicked at least once" }),
  bounced: Count,
  complained: Count,
  unsubscribed: Count.annotate({
    description:
      "contact.unsubscribed events; with a stream other than ALL, those attributed to that stream (the last mail the contact was sent before unsubscribing)"
  })
}

const Range = {
  from: Timestamp.annotate({ description: "Start of the first bucket" }),
  to: Timestamp.annotate({ description: "End of the last bucket" }),
  tz: Schema.String,
  stream: Schema.Literals(STREAMS)
}

const Point = Schema.Struct({
  start: Timestamp,
  local: Schema.String.annotate({ description: "The bucket's local date (YYYY-MM-DD) or hour (YYYY-MM-DDTHH:mm)" }),
  ...Metrics
}).annotate({ identifier: "AnalyticsPoint" })

const Totals = Schema.Struct({ ...Metrics, newContacts: Count }).annotate({ identifier: "AnalyticsTotals" })

const CampaignStats = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  recipients: Count.annotate({ description: "Emails queued for the campaign in the range" }),
  ...Metrics,
  rates: Rates
}).annotate({ identifier: "CampaignAnalytics" })

const errors = [...commonErrors, ...inputErrors] as const
const endpoint = <const Name extends string, const Path extends `/${string}`, Q extends Record<string, QueryParam>, S extends Schema.Top>(
  name: Name,
  path: Path,
  params: Q,
  success: S,
  description: string
) => {
  const query = queryParameters({ ...rangeParams, ...params })
  return HttpApiEndpoint.get(name, path, { query: query.fields, success, error: errors })
    .annotate(OpenApi.Description, description)
    .annotate(OpenApi.Transform, query.document)
}

const CampaignStatsQuery = queryParameters({
  ...rangeParams,
  campaignId: QueryParam.text("Only this campaign (404 when it is not one of the project's)", "uuid"),
  limit: limitParam(100, 500)
})

export class AnalyticsApi extends HttpApiGroup.make("analytics")
  .add(
    endpoint(
      "timeseries",
      "/analytics/timeseries",
      {},
      Schema.Struct({
        ...Range,
        granularity: Schema.Literals(["hour", "day"]),
        buckets: Schema.Array(Point),
        previous: Schema.Struct({ from: Timestamp, to: Timestamp, buckets: Schema.Array(Point) })
      }),
      "Per local hour (ranges up to 2 days) or day: sent, delivered, unique opens and clicks, bounces, complaints and unsubscribes, " +
        "and the same series for the previous period of equal length (bucket i of `previous` precedes bucket i by the range's length)."
    ),
    endpoint(
      "overview",
      "/analytics/overview",
      {},
      Schema.Struct({
        ...Range,
        current: Totals,
        previous: Totals,
        rates: Rates,
        change: Schema.Record(Schema.String, Schema.NullOr(Schema.Finite)).annotate({
          description: "Per metric: (current - previous) / previous, null when the previous period had none"
        })
      }),
      "Headline numbers for the range and the previous period of equal length."
    ),
    endpoint(
      "topCampaigns",
      "/analytics/top-campaigns",
      {
        limit: limitParam(5, 50),
        sort: QueryParam.literals(["sent", "delivered", "opened", "clicked", "openRate", "clickRate"], "Ranking; default opened", "opened")
      },
      Schema.Struct({ ...Range, campaigns: Schema.Array(CampaignStats) }),
      "Campaigns with mail activity in the range, best first."
    ),
    HttpApiEndpoint.get("campaignStats", "/analytics/campaign-stats", {
      query: CampaignStatsQuery.fields,
      success: Schema.Struct({ ...Range, campaigns: Schema.Array(CampaignStats) }),
      error: [...errors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Per campaign with activity in the range (or the one asked for): recipients, sent, delivered, unique opens and clicks, " +
        "bounces, complaints, unsubscribes and rates; most sent first."
    )
      .annotate(OpenApi.Transform, CampaignStatsQuery.document),
    endpoint(
      "topEvents",
      "/analytics/top-events",
      { limit: limitParam(10, 100) },
      Schema.Struct({
        ...Range,
        events: Schema.Array(Schema.Struct({ name: Schema.String, count: Count, previousCount: Count }))
      }),
      "Custom (tracked) events by count in the range, with their count in the previous period of equal length."
    ),
    endpoint(
      "deliverability",
      "/analytics/deliverability",
      { limit: limitParam(20, 100) },
      Schema.Struct({
        ...Range,
        domains: Schema.Array(Schema.Struct({
          domain: Schema.String,
          sent: Count,
          delivered: Count,
          bounced: Count,
          hardBounces: Count.annotate({ description: "email.bounce events of type Permanent" }),
          softBounces: Count.annotate({ description: "email.bounce events of type Transient or Undetermined" }),
          complaints: Count,
          deliveryRate: Rate,
          bounceRate: Rate,
          complaintRate: Rate
        }))
      }),
      "Bounces and complaints per recipient domain, most sent first."
    ),
    endpoint(
      "links",
      "/analytics/links",
      { limit: limitParam(20, 100) },
      Schema.Struct({
        ...Range,
        links: Schema.Array(
          Schema.Struct({ url: Schema.String, clicks: Count.annotate({ description: "Every recorded click on the link" }) })
        )
      }),
      "Most clicked links (URLs cut to 500 characters)."
    ),
    endpoint(
      "heatmap",
      "/analytics/heatmap",
      {},
      Schema.Struct({
        ...Range,
        cells: Schema.Array(Schema.Struct({
          weekday: Schema.Int.annotate({ description: "ISO weekday in `tz`: 1 Monday … 7 Sunday" }),
          hour: Schema.Int.annotate({ description: "Local hour 0..23" }),
          opens: Count.annotate({ description: "First opens" }),
          clicks: Count.annotate({ description: "First clicks" })
        }))
      }),
      "First opens and clicks by local weekday × hour (all 168 cells)."
    ),
    endpoint(
      "audience",
      "/analytics/audience",
      {},
      Schema.Struct({
        ...Range,
        granularity: Schema.Literals(["hour", "day"]),
        buckets: Schema.Array(Schema.Struct({
          start: Timestamp,
          local: Schema.String,
          total: Count.annotate({ description: "Contacts created before the bucket's end (of those that still exist)" }),
          new: Count,
          unsubscribed: Count
        }))
      }),
      "Contacts in total, new and unsubscribed per local hour or day."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Analytics",
    description: "Email and audience analytics (secret key). Every endpoint takes `from`, `to` (at most " + MAX_RANGE_DAYS +
      " days), `tz` and `stream`; bad values answer 422 naming the field. Figures are read from rollups kept in the " +
      "transactions that record mail and events, so they are exact and cost the same whatever the project's size. " +
      "Every local day and hour of every zone starts on a quarter hour; the rare zone whose offset in a range is not a " +
      "whole number of quarter hours (historic local mean time) answers 422 on `tz`. Per-key figures (top-campaigns, " +
      "campaign-stats, top-events, deliverability, links) count whole UTC hours: in a zone such as Asia/Kolkata their " +
      "range starts up to 45 minutes earlier and ends up to 45 minutes later; `from` and `to` in the answer are the range counted."
  }))
{}
