/**
 * Reads of the analytics rollups (migrations/0013_analytics.sql): a request reads a few hundred rows
 * whatever the number of emails and events, every query scoped to the caller's project. Ranges come
 * from src/analytics/range.ts, already widened to whole local buckets.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type AnalyticsRange, type Bucket, grainFor, type Piece, piecesOf, type Stream } from "../domain/analytics/range.ts"
import { pgArray } from "../lib/pgArray.ts"
import { iso } from "./columns.ts"

export const EMAIL_METRICS = [
  "queued",
  "sent",
  "delivered",
  "opened",
  "clicked",
  "bounced",
  "hard_bounced",
  "soft_bounced",
  "complained",
  "unsubscribed"
] as const
export type EmailMetric = (typeof EMAIL_METRICS)[number]
export type EmailTotals = Record<EmailMetric, number>

const zero = (): EmailTotals => Object.fromEntries(EMAIL_METRICS.map((metric) => [metric, 0])) as EmailTotals
const sums = EMAIL_METRICS.map((metric) => `COALESCE(sum(${metric}), 0)::float8 AS ${metric}`).join(", ")
const toTotals = (row: Record<string, unknown>): EmailTotals =>
  Object.fromEntries(EMAIL_METRICS.map((metric) => [metric, Number(row[metric] ?? 0)])) as EmailTotals

/** A share rounded to 4 places; 0 when nothing was there to share. */
export const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0)

export const rates = (totals: EmailTotals) => ({
  deliveryRate: rate(totals.delivered, totals.sent),
  openRate: rate(totals.opened, totals.sent),
  clickRate: rate(totals.clicked, totals.sent),
  clickToOpenRate: rate(totals.clicked, totals.opened),
  bounceRate: rate(totals.bounced, totals.sent),
  complaintRate: rate(totals.complained, totals.sent),
  unsubscribeRate: rate(totals.unsubscribed, totals.sent)
})

const SERIES_METRICS = ["sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed"] as const
export type SeriesPoint = { readonly start: string; readonly local: string } & Record<(typeof SERIES_METRICS)[number], number>

export interface CampaignStats extends Omit<EmailTotals, "queued" | "hard_bounced" | "soft_bounced"> {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly recipients: number
  readonly rates: ReturnType<typeof rates>
}

const point = (bucket: Bucket, totals: EmailTotals): SeriesPoint => ({
  start: iso(bucket.start),
  local: bucket.local,
  ...Object.fromEntries(SERIES_METRICS.map((metric) => [metric, totals[metric]])) as Record<(typeof SERIES_METRICS)[number], number>
})

const edgesOf = (buckets: ReadonlyArray<Bucket>) => buckets.flatMap((bucket) => [bucket.start, bucket.end])

export class Analytics extends Context.Service<Analytics, {
  readonly timeseries: (projectId: string, range: AnalyticsRange) => Effect.Effect<{
    readonly current: ReadonlyArray<SeriesPoint>
    readonly previous: ReadonlyArray<SeriesPoint>
  }, SqlError.SqlError>
  readonly overview: (projectId: string, range: AnalyticsRange) => Effect.Effect<{
    readonly current: EmailTotals & { readonly newContacts: number }
    readonly previous: EmailTotals & { readonly newContacts: number }
  }, SqlError.SqlError>
  readonly campaigns: (
    projectId: string,
    range: AnalyticsRange,
    campaignId?: string
  ) => Effect.Effect<ReadonlyArray<CampaignStats>, SqlError.SqlError>
  readonly topEvents: (projectId: string, range: AnalyticsRange, limit: number) => Effect.Effect<
    ReadonlyArray<{ readonly name: string; readonly count: number; readonly previousCount: number }>,
    SqlError.SqlError
  >
  readonly deliverability: (projectId: string, range: AnalyticsRange, limit: number) => Effect.Effect<
    ReadonlyArray<{ readonly domain: string } & EmailTotals>,
    SqlError.SqlError
  >
  readonly links: (projectId: string, range: AnalyticsRange, limit: number) => Effect.Effect<
    ReadonlyArray<{ readonly url: string; readonly clicks: number }>,
    SqlError.SqlError
  >
  readonly heatmap: (projectId: string, range: AnalyticsRange) => Effect.Effect<
    ReadonlyArray<{ readonly weekday: number; readonly hour: number; readonly opens: number; readonly clicks: number }>,
    SqlError.SqlError
  >
  readonly audience: (projectId: string, range: AnalyticsRange) => Effect.Effect<
    ReadonlyArray<
      { readonly start: string; readonly local: string; readonly total: number; readonly new: number; readonly unsubscribed: number }
    >,
    SqlError.SqlError
  >
  /** Counters of one kind over [from, to) (quarter-hour ends, or unbounded), per key. */
  readonly counterTotals: (
    projectId: string,
    kind: string,
    stream: Stream,
    from: number | null,
    to: number | null,
    keys?: ReadonlyArray<string>
  ) => Effect.Effect<Map<string, number>, SqlError.SqlError>
  /** Folds the shards of closed buckets (called by the worker's compaction loop). */
  readonly compact: (closedBefore: Date) => Effect.Effect<number, SqlError.SqlError>
}>()("app/store/Analytics") {
  static readonly layer = Layer.effect(
    Analytics,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const inPieces = (pieces: ReadonlyArray<Piece>) =>
        sql.or(pieces.map((piece) =>
          sql.and([
            sql`grain = ${piece.grain}`,
            piece.from === null ? sql`true` : sql`bucket >= ${iso(piece.from)}::timestamptz`,
            piece.to === null ? sql`true` : sql`bucket < ${iso(piece.to)}::timestamptz`
          ])
        ))

      /** Email metrics per key over [from, to). */
      const emailTotals = (
        projectId: string,
        kind: "p" | "c" | "d",
        stream: Stream,
        from: number,
        to: number,
        keys?: ReadonlyArray<string>
      ) =>
        Effect.gen(function*() {
          const pieces = piecesOf(from, to)
          if (pieces.length === 0) return new Map<string, EmailTotals>()
          const rows = yield* sql<Record<string, unknown> & { key: string }>`
            SELECT key, ${sql.literal(sums)} FROM analytics_email_rollups
            WHERE project_id = ${projectId} AND kind = ${kind} AND stream = ${stream} AND (${inPieces(pieces)})
              ${keys ? sql`AND key = ANY(${pgArray(keys)}::text[])` : sql``}
            GROUP BY key`
          return new Map(rows.map((row) => [row.key, toTotals(row)]))
        })

      /** Email metrics per bucket of `buckets` (contiguous), read at the one grain their edges allow. */
      const emailSeries = (projectId: string, stream: Stream, buckets: ReadonlyArray<Bucket>) =>
        Effect.gen(function*() {
          const grain = grainFor(edgesOf(buckets))!
          const bounds = [...buckets.map((bucket) => bucket.start), buckets.at(-1)!.end].map(iso)
          const rows = yield* sql<Record<string, unknown> & { i: number }>`
            SELECT width_bucket(bucket, ${pgArray(bounds)}::timestamptz[]) AS i, ${sql.literal(sums)}
            FROM analytics_email_rollups
            WHERE project_id = ${projectId} AND kind = 'p' AND key = '' AND stream = ${stream} AND grain = ${grain}
              AND bucket >= ${bounds[0]!}::timestamptz AND bucket < ${bounds.at(-1)!}::timestamptz
            GROUP BY 1`
          const byIndex = new Map(rows.map((row) => [Number(row.i), toTotals(row)]))
          return buckets.map((_, index) => byIndex.get(index + 1) ?? zero())
        })

      const counterTotals = (
        projectId: string,
        kind: string,
        stream: Stream,
        from: number | null,
        to: number | null,
        keys?: ReadonlyArray<string>
      ) =>
        Effect.gen(function*() {
          const pieces = piecesOf(from, to)
          if (pieces.length === 0) return new Map<string, number>()
          const rows = yield* sql<{ key: string; n: number }>`
            SELECT key, sum(n)::float8 AS n FROM analytics_counters
            WHERE project_id = ${projectId} AND kind = ${kind} AND stream = ${stream} AND (${inPieces(pieces)})
              ${keys ? sql`AND key = ANY(${pgArray(keys)}::text[])` : sql``}
            GROUP BY key`
          return new Map(rows.map((row) => [row.key, Number(row.n)]))
        })

      const counterSeries = (projectId: string, key: string, buckets: ReadonlyArray<Bucket>) =>
        Effect.gen(function*() {
          const grain = grainFor(edgesOf(buckets))!
          const bounds = [...buckets.map((bucket) => bucket.start), buckets.at(-1)!.end].map(iso)
          const rows = yield* sql<{ i: number; n: number }>`
            SELECT width_bucket(bucket, ${pgArray(bounds)}::timestamptz[]) AS i, sum(n)::float8 AS n
            FROM analytics_counters
            WHERE project_id = ${projectId} AND kind = 'type' AND stream = 'ALL' AND key = ${key} AND grain = ${grain}
              AND bucket >= ${bounds[0]!}::timestamptz AND bucket < ${bounds.at(-1)!}::timestamptz
            GROUP BY 1`
          const byIndex = new Map(rows.map((row) => [Number(row.i), Number(row.n)]))
          return buckets.map((_, index) => byIndex.get(index + 1) ?? 0)
        })

      const periodOf = (buckets: ReadonlyArray<Bucket>) => ({ from: buckets[0]!.start, to: buckets.at(-1)!.end })

      const timeseries = Effect.fn("Analytics.timeseries")(function*(projectId: string, range: AnalyticsRange) {
        const series = yield* emailSeries(projectId, range.stream, [...range.previous, ...range.buckets])
        const previous = series.slice(0, range.previous.length)
        const current = series.slice(range.previous.length)
        return {
          current: range.buckets.map((bucket, index) => point(bucket, current[index]!)),
          previous: range.previous.map((bucket, index) => point(bucket, previous[index]!))
        }
      })

      const overview = Effect.fn("Analytics.overview")(function*(projectId: string, range: AnalyticsRange) {
        const totalsOf = (period: { from: number; to: number }) =>
          Effect.all({
            email: emailTotals(projectId, "p", range.stream, period.from, period.to),
            contacts: counterTotals(projectId, "type", "ALL", period.from, period.to, ["contact.created"])
          }).pipe(
            Effect.map(({ email, contacts }) => ({ ...(email.get("") ?? zero()), newContacts: contacts.get("contact.created") ?? 0 }))
          )
        return {
          current: yield* totalsOf(periodOf(range.buckets)),
          previous: yield* totalsOf(periodOf(range.previous))
        }
      })

      const campaigns = Effect.fn("Analytics.campaigns")(function*(projectId: string, range: AnalyticsRange, campaignId?: string) {
        const totals = yield* emailTotals(projectId, "c", "ALL", range.from, range.to, campaignId ? [campaignId] : undefined)
        const ids = campaignId ? [campaignId] : [...totals.keys()]
        if (ids.length === 0) return []
        const found = yield* sql<{ id: string; name: string; status: string }>`
          SELECT id, name, status FROM campaigns WHERE project_id = ${projectId} AND id = ANY(${pgArray(ids)}::uuid[])`
        return found.map((campaign): CampaignStats => {
          const t = totals.get(campaign.id) ?? zero()
          return {
            id: campaign.id,
            name: campaign.name,
            status: campaign.status,
            recipients: t.queued,
            sent: t.sent,
            delivered: t.delivered,
            opened: t.opened,
            clicked: t.clicked,
            bounced: t.bounced,
            complained: t.complained,
            unsubscribed: t.unsubscribed,
            rates: rates(t)
          }
        })
      })

      const topEvents = Effect.fn("Analytics.topEvents")(function*(projectId: string, range: AnalyticsRange, limit: number) {
        const current = yield* counterTotals(projectId, "event", "ALL", range.from, range.to)
        const top = [...current].filter(([, count]) => count > 0)
          .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
          .slice(0, limit)
        if (top.length === 0) return []
        const previousPeriod = periodOf(range.previous)
        const previous = yield* counterTotals(projectId, "event", "ALL", previousPeriod.from, previousPeriod.to, top.map(([name]) => name))
        return top.map(([name, count]) => ({ name, count, previousCount: previous.get(name) ?? 0 }))
      })

      const deliverability = Effect.fn("Analytics.deliverability")(function*(projectId: string, range: AnalyticsRange, limit: number) {
        const totals = yield* emailTotals(projectId, "d", range.stream, range.from, range.to)
        return [...totals]
          .filter(([, t]) => EMAIL_METRICS.some((metric) => t[metric] !== 0))
          .sort(([a, x], [b, y]) => y.sent - x.sent || y.queued - x.queued || (a < b ? -1 : a > b ? 1 : 0))
          .slice(0, limit)
          .map(([domain, t]) => ({ domain, ...t }))
      })

      const links = Effect.fn("Analytics.links")(function*(projectId: string, range: AnalyticsRange, limit: number) {
        const totals = yield* counterTotals(projectId, "link", range.stream, range.from, range.to)
        return [...totals].filter(([, clicks]) => clicks > 0)
          .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
          .slice(0, limit)
          .map(([url, clicks]) => ({ url, clicks }))
      })

      const heatmap = Effect.fn("Analytics.heatmap")(function*(projectId: string, range: AnalyticsRange) {
        // Local hours need rows no longer than the zone's offset allows: hours, or quarter hours (+05:30).
        const grain = grainFor(edgesOf(range.buckets)) === 15 ? 15 : 60
        const rows = yield* sql<{ weekday: number; hour: number; opens: number; clicks: number }>`
          SELECT extract(isodow FROM bucket AT TIME ZONE ${range.tz})::int AS weekday, extract(hour FROM bucket AT TIME ZONE ${range.tz})::int AS hour,
                 COALESCE(sum(opened), 0)::float8 AS opens, COALESCE(sum(clicked), 0)::float8 AS clicks
          FROM analytics_email_rollups
          WHERE project_id = ${projectId} AND kind = 'p' AND key = '' AND stream = ${range.stream} AND grain = ${grain}
            AND bucket >= ${iso(range.from)}::timestamptz AND bucket < ${iso(range.to)}::timestamptz
          GROUP BY 1, 2`
        const cells = new Map(rows.map((row) => [`${row.weekday}:${row.hour}`, row]))
        return Array.from({ length: 7 * 24 }, (_, index) => {
          const weekday = Math.floor(index / 24) + 1
          const hour = index % 24
          const row = cells.get(`${weekday}:${hour}`)
          return { weekday, hour, opens: Number(row?.opens ?? 0), clicks: Number(row?.clicks ?? 0) }
        })
      })

      const audience = Effect.fn("Analytics.audience")(function*(projectId: string, range: AnalyticsRange) {
        const before = yield* counterTotals(projectId, "type", "ALL", null, range.from, ["contact.created"])
        const created = yield* counterSeries(projectId, "contact.created", range.buckets)
        const unsubscribed = yield* counterSeries(projectId, "contact.unsubscribed", range.buckets)
        let total = before.get("contact.created") ?? 0
        return range.buckets.map((bucket, index) => {
          total += created[index]!
          return { start: iso(bucket.start), local: bucket.local, total, new: created[index]!, unsubscribed: unsubscribed[index]! }
        })
      })

      const compact = Effect.fn("Analytics.compact")(function*(closedBefore: Date) {
        const rows = yield* sql<{ folded: number }>`SELECT ms_compact_rollups(${closedBefore.toISOString()}::timestamptz)::float8 AS folded`
        return Number(rows[0]?.folded ?? 0)
      })

      return Analytics.of({
        timeseries,
        overview,
        campaigns,
        topEvents,
        deliverability,
        links,
        heatmap,
        audience,
        counterTotals: (projectId, kind, stream, from, to, keys) => counterTotals(projectId, kind, stream, from, to, keys),
        compact
      })
    })
  )
}
