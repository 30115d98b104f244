import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type AnalyticsRange, analyticsRange, type RangeQuery, wholeHours } from "../../domain/analytics/range.ts"
import { isUuid } from "../../domain/ids.ts"
import { Analytics, type EmailTotals, rate, rates } from "../../store/Analytics.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { iso } from "../../store/columns.ts"
import { NotFound, ValidationFailed } from "../api/statusErrors.ts"

/** A whole number clamped to 1..max, or the fallback. */
const clamp = (raw: string | undefined, fallback: number, max: number) => {
  const value = raw === undefined ? NaN : Number.parseInt(raw, 10)
  return Number.isFinite(value) ? Math.min(max, Math.max(1, value)) : fallback
}

const METRICS = ["sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed"] as const
const metricsOf = (totals: EmailTotals) =>
  Object.fromEntries(METRICS.map((metric) => [metric, totals[metric]])) as Record<(typeof METRICS)[number], number>

/** The checked range, or the 422 naming every bad field. */
const rangeOf = (query: RangeQuery) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const range = analyticsRange(query, now)
    return Array.isArray(range) ? Effect.fail(ValidationFailed.of(range)) : Effect.succeed(range)
  })

const echo = (range: AnalyticsRange) => ({ from: iso(range.from), to: iso(range.to), tz: range.tz, stream: range.stream })

/** Postgres may not know a zone the runtime knows (or the reverse): its refusal is the caller's 422, not a 500. */
const zoneRefused = (range: AnalyticsRange) => (error: unknown) =>
  /time zone/i.test(String((error as { cause?: unknown })?.cause ?? error))
    ? Effect.fail(ValidationFailed.field("tz", "this time zone is not known to the database", "invalid_time_zone", range.tz))
    : Effect.die(error)

export const AnalyticsHandlers = HttpApiBuilder.group(
  Api,
  "analytics",
  Effect.fnUntraced(function*(handlers) {
    const analytics = yield* Analytics
    const withRange = <A>(
      query: RangeQuery,
      use: (projectId: string, range: AnalyticsRange) => Effect.Effect<A, NotFound | unknown>,
      perKey = false
    ) =>
      rendered(Effect.gen(function*() {
        const project = yield* CurrentProject
        const checked = yield* rangeOf(query)
        const range = perKey ? wholeHours(checked) : checked
        return yield* use(project.id, range).pipe(
          Effect.catch((error): Effect.Effect<never, NotFound | ValidationFailed> =>
            error instanceof NotFound ? Effect.fail(error) : zoneRefused(range)(error)
          )
        )
      }))

    return handlers
      .handle(
        "timeseries",
        ({ query }) =>
          withRange(query, (projectId, range) =>
            Effect.map(analytics.timeseries(projectId, range), (series) => ({
              ...echo(range),
              granularity: range.granularity,
              buckets: series.current,
              previous: { from: iso(range.previous[0]!.start), to: iso(range.previous.at(-1)!.end), buckets: series.previous }
            })))
      )
      .handle(
        "overview",
        ({ query }) =>
          withRange(query, (projectId, range) =>
            Effect.map(analytics.overview(projectId, range), ({ current, previous }) => ({
              ...echo(range),
              current: { ...metricsOf(current), newContacts: current.newContacts },
              previous: { ...metricsOf(previous), newContacts: previous.newContacts },
              rates: rates(current),
              change: Object.fromEntries([...METRICS, "newContacts" as const].map((metric) => [
                metric,
                previous[metric] === 0 ? null : rate(current[metric] - previous[metric], previous[metric])
              ]))
            })))
      )
      .handle(
        "topCampaigns",
        ({ query }) =>
          withRange(query, (projectId, range) =>
            Effect.map(analytics.campaigns(projectId, range), (campaigns) => {
              const sort = ["sent", "delivered", "opened", "clicked", "openRate", "clickRate"].includes(query.sort ?? "")
                ? query.sort!
                : "opened"
              const score = (campaign: (typeof campaigns)[number]) =>
                sort === "openRate" ? campaign.rates.openRate : sort === "clickRate" ? campaign.rates.clickRate : campaign[sort as "sent"]
              const ranked = [...campaigns].sort((a, b) => score(b) - score(a) || b.sent - a.sent || (a.id < b.id ? -1 : 1))
              return { ...echo(range), campaigns: ranked.slice(0, clamp(query.limit, 5, 50)) }
            }), true)
      )
      .handle("campaignStats", ({ query }) =>
        withRange(query, (projectId, range) =>
          Effect.gen(function*() {
            const campaignId = query.campaignId === undefined || query.campaignId === "" ? undefined : query.campaignId
            if (campaignId !== undefined && !isUuid(campaignId))
              return yield* NotFound.of("Campaign")
            const campaigns = yield* analytics.campaigns(projectId, range, campaignId)
            if (campaignId !== undefined && campaigns.length === 0)
              return yield* NotFound.of("Campaign")
            const ranked = [...campaigns].sort((a, b) => b.sent - a.sent || b.recipients - a.recipients || (a.id < b.id ? -1 : 1))
            return { ...echo(range), campaigns: ranked.slice(0, clamp(query.limit, 100, 500)) }
          }), true))
      .handle(
        "topEvents",
        ({ query }) =>
          withRange(
            query,
            (projectId, range) =>
              Effect.map(analytics.topEvents(projectId, range, clamp(query.limit, 10, 100)), (events) => ({ ...echo(range), events })),
            true
          )
      )
      .handle(
        "deliverability",
        ({ query }) =>
          withRange(
            query,
            (projectId, range) =>
              Effect.map(analytics.deliverability(projectId, range, clamp(query.limit, 20, 100)), (domains) => ({
                ...echo(range),
                domains: domains.map((d) => ({
                  domain: d.domain,
                  sent: d.sent,
                  delivered: d.delivered,
                  bounced: d.bounced,
                  hardBounces: d.hard_bounced,
                  softBounces: d.soft_bounced,
                  complaints: d.complained,
                  deliveryRate: rate(d.delivered, d.sent),
                  bounceRate: rate(d.bounced, d.sent),
                  complaintRate: rate(d.complained, d.sent)
                }))
              })),
            true
          )
      )
      .handle(
        "links",
        ({ query }) =>
          withRange(
            query,
            (projectId, range) =>
              Effect.map(analytics.links(projectId, range, clamp(query.limit, 20, 100)), (links) => ({ ...echo(range), links })),
            true
          )
      )
      .handle(
        "heatmap",
        ({ query }) =>
          withRange(query, (projectId, range) => Effect.map(analytics.heatmap(projectId, range), (cells) => ({ ...echo(range), cells })))
      )
      .handle(
        "audience",
        ({ query }) =>
          withRange(
            query,
            (projectId, range) =>
              Effect.map(analytics.audience(projectId, range), (buckets) => ({ ...echo(range), granularity: range.granularity, buckets }))
          )
      )
  })
)
