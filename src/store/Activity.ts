/**
 * The activity feed and its counts. The feed merges three keyset-paged sources, each read newest first
 * by its (project, time, id) index: stored events (emails sent/delivered/opened/..., subscriptions,
 * segment entries and exits, custom events), contacts (created) and activity_log (failed and suppressed
 * mail, workflow executions, campaign states; written by triggers, migrations/0013_analytics.sql).
 * Counts come from the rollups, with only the partial quarter hours at a range's ends counted raw.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { InvalidCursor } from "../domain/errors.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { SqlClient, type SqlError } from "effect/sql"
import { ACTIVITY_TYPES, type ActivityType, EVENT_TYPES } from "../domain/analytics/activityTypes.ts"
import { GRAIN_MS } from "../domain/analytics/range.ts"
import { pgArray } from "../lib/pgArray.ts"
import { Analytics } from "./Analytics.ts"
import { decodeTimeCursor, encodeCursor, timeKeySql } from "./cursor.ts"
import { decodeRows, IdRow, iso, JsonObject, Timestamp } from "./columns.ts"

export interface ActivityItem {
  readonly id: string
  readonly type: ActivityType
  readonly occurredAt: string
  readonly event?: string
  readonly contact?: { readonly id: string; readonly email: string | null }
  readonly subject?: string
  readonly campaign?: { readonly id: string; readonly name: string | null }
  readonly workflow?: { readonly id: string; readonly name: string | null }
  readonly data: Record<string, unknown>
}

export interface FeedQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly types: ReadonlyArray<ActivityType> | undefined
  readonly contactId: string | undefined
  readonly campaignId: string | undefined
  readonly workflowId: string | undefined
  readonly from: number | undefined
  readonly to: number | undefined
  readonly search: string | undefined
}

export interface UpcomingItem {
  readonly type: "campaign.scheduled" | "workflow.delay" | "workflow.timeout"
  readonly dueAt: string
  readonly campaign?: { readonly id: string; readonly name: string }
  readonly workflow?: { readonly id: string; readonly name: string }
  readonly contact?: { readonly id: string; readonly email: string | null }
  readonly step?: { readonly id: string; readonly name: string; readonly type: string }
  readonly executionId?: string
}

/** One item of a feed source (events, contacts, activity_log), aliased to the same columns. */
const SourceRow = Schema.Struct({
  id: Schema.String,
  type: Schema.Literals(ACTIVITY_TYPES),
  at_key: Schema.String,
  contact_id: Schema.NullOr(Schema.String),
  event: Schema.NullOr(Schema.String),
  subject: Schema.NullOr(Schema.String),
  campaign_id: Schema.NullOr(Schema.String),
  workflow_id: Schema.NullOr(Schema.String),
  data: Schema.NullOr(JsonObject)
})
type SourceRow = typeof SourceRow.Type

const NamedRow = Schema.Struct({ id: Schema.String, name: Schema.String })
const EmailRow = Schema.Struct({ id: Schema.String, email: Schema.String })
const TypeCountRow = Schema.Struct({ type: Schema.String, n: Schema.Number })

/** A due timer or scheduled campaign, as `upcoming` selects it. */
const UpcomingRow = Schema.Struct({
  type: Schema.Literals(["campaign.scheduled", "workflow.delay", "workflow.timeout"]),
  due_at: Timestamp,
  campaign_id: Schema.NullOr(Schema.String),
  campaign_name: Schema.NullOr(Schema.String),
  workflow_id: Schema.NullOr(Schema.String),
  workflow_name: Schema.NullOr(Schema.String),
  contact_id: Schema.NullOr(Schema.String),
  contact_email: Schema.NullOr(Schema.String),
  step_id: Schema.NullOr(Schema.String),
  step_name: Schema.NullOr(Schema.String),
  step_type: Schema.NullOr(Schema.String),
  execution_id: Schema.NullOr(Schema.String)
})

const newestFirst = (a: SourceRow, b: SourceRow) =>
  a.at_key < b.at_key ? 1 : a.at_key > b.at_key ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0

export class Activity extends Context.Service<Activity, {
  readonly feed: (projectId: string, query: FeedQuery) => Effect.Effect<
    { readonly data: ReadonlyArray<ActivityItem>; readonly cursor: string | null; readonly hasMore: boolean },
    InvalidCursor | PersistenceError
  >
  /** Items per type in [from, to) (either end may be open); `exclusiveFrom` counts only items after `from`. */
  readonly counts: (projectId: string, from: number | null, to: number | null, exclusiveFrom?: boolean) => Effect.Effect<
    Map<ActivityType, number>,
    PersistenceError
  >
  readonly upcoming: (projectId: string, hours: number, limit: number) => Effect.Effect<ReadonlyArray<UpcomingItem>, PersistenceError>
}>()("app/store/Activity") {
  static readonly layer = Layer.effect(
    Activity,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const analytics = yield* Analytics
      const sourceRows = decodeRows(SourceRow)

      const feed = Effect.fn("Activity.feed")(function*(projectId: string, query: FeedQuery) {
        const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor)
        if (query.cursor !== undefined && !after) return yield* InvalidCursor.of()
        let contactIds: Array<string> | undefined = query.contactId === undefined ? undefined : [query.contactId]
        if (query.search !== undefined) {
          const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, "\\$&")}%`
          // Emails are stored lower-cased; the feed follows at most 1,000 matching contacts.
          const matches = yield* decodeRows(IdRow)(sql`
            SELECT id FROM contacts WHERE project_id = ${projectId} AND email LIKE ${pattern}
              ${contactIds ? sql`AND id = ANY(${pgArray(contactIds)}::uuid[])` : sql``}
            LIMIT 1000`)
          contactIds = matches.map((row) => row.id)
        }
        if (contactIds && contactIds.length === 0) return { data: [], cursor: null, hasMore: false }
        const wants = (type: ActivityType) => query.types === undefined || query.types.includes(type)
        const window = query.limit + 1
        const common = (time: string, id: string, contact: string) => [
          query.from === undefined ? sql`true` : sql`${sql.literal(time)} >= ${iso(query.from)}::timestamptz`,
          query.to === undefined ? sql`true` : sql`${sql.literal(time)} < ${iso(query.to)}::timestamptz`,
          after ? sql`(${sql.literal(time)}, ${sql.literal(id)}) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql`true`,
          contactIds ? sql`${sql.literal(contact)} = ANY(${pgArray(contactIds)}::uuid[])` : sql`true`
        ]

        const sources: Array<Effect.Effect<ReadonlyArray<SourceRow>, SqlError.SqlError | Schema.SchemaError>> = []
        const eventTypes = query.types?.filter((type) => EVENT_TYPES.has(type))
        if (eventTypes === undefined || eventTypes.length > 0) {
          sources.push(sourceRows(sql`
            SELECT e.id, ms_activity_type(e.name) AS type, ${
            sql.literal(timeKeySql("e.created_at"))
          } AS at_key, e.contact_id, e.name AS event,
                   e.data->>'subject' AS subject, ms_try_uuid(e.data->>'campaignId') AS campaign_id,
                   ms_try_uuid(e.data->>'workflowId') AS workflow_id, e.data
            FROM events e
            WHERE ${
            sql.and([
              sql`e.project_id = ${projectId}`,
              ...common("e.created_at", "e.id", "e.contact_id"),
              eventTypes ? sql`ms_activity_type(e.name) = ANY(${pgArray(eventTypes)}::text[])` : sql`true`,
              query.campaignId ? sql`e.data->>'campaignId' = ${query.campaignId}` : sql`true`,
              query.workflowId ? sql`e.data->>'workflowId' = ${query.workflowId}` : sql`true`
            ])
          }
            ORDER BY e.created_at DESC, e.id DESC LIMIT ${window}`))
        }
        if (wants("contact.created") && !query.campaignId && !query.workflowId) {
          sources.push(sourceRows(sql`
            SELECT c.id, 'contact.created' AS type, ${sql.literal(timeKeySql("c.created_at"))} AS at_key, c.id AS contact_id, NULL AS event,
                   NULL AS subject, NULL AS campaign_id, NULL AS workflow_id, NULL AS data
            FROM contacts c
            WHERE ${sql.and([sql`c.project_id = ${projectId}`, ...common("c.created_at", "c.id", "c.id")])}
            ORDER BY c.created_at DESC, c.id DESC LIMIT ${window}`))
        }
        const logTypes = query.types?.filter((type) => !EVENT_TYPES.has(type) && type !== "contact.created")
        if (logTypes === undefined || logTypes.length > 0) {
          sources.push(sourceRows(sql`
            SELECT a.id, a.type, ${sql.literal(timeKeySql("a.occurred_at"))} AS at_key, a.contact_id, NULL AS event, a.subject,
                   a.campaign_id, a.workflow_id, a.data
            FROM activity_log a
            WHERE ${
            sql.and([
              sql`a.project_id = ${projectId}`,
              ...common("a.occurred_at", "a.id", "a.contact_id"),
              logTypes ? sql`a.type = ANY(${pgArray(logTypes)}::text[])` : sql`true`,
              query.campaignId ? sql`a.campaign_id = ${query.campaignId}` : sql`true`,
              query.workflowId ? sql`a.workflow_id = ${query.workflowId}` : sql`true`
            ])
          }
            ORDER BY a.occurred_at DESC, a.id DESC LIMIT ${window}`))
        }
        const rows = (yield* Effect.all(sources, { concurrency: "unbounded" })).flat().sort(newestFirst)
        const page = rows.slice(0, query.limit)
        const hasMore = rows.length > query.limit

        const distinct = (values: ReadonlyArray<string | null>) => [...new Set(values.filter((value): value is string => value !== null))]
        const contactsById = new Map<string, string>()
        const namesById = new Map<string, string>()
        const contactIdsOnPage = distinct(page.map((row) => row.contact_id))
        if (contactIdsOnPage.length > 0) {
          for (
            const row of yield* decodeRows(EmailRow)(sql`
            SELECT id, email FROM contacts WHERE project_id = ${projectId} AND id = ANY(${pgArray(contactIdsOnPage)}::uuid[])`)
          ) {
            contactsById.set(row.id, row.email)
          }
        }
        const campaignIds = distinct(page.map((row) => row.campaign_id))
        const workflowIds = distinct(page.map((row) => row.workflow_id))
        if (campaignIds.length + workflowIds.length > 0) {
          for (
            const row of yield* decodeRows(NamedRow)(sql`
            SELECT id, name FROM campaigns WHERE project_id = ${projectId} AND id = ANY(${pgArray(campaignIds)}::uuid[])
            UNION ALL
            SELECT id, name FROM workflows WHERE project_id = ${projectId} AND id = ANY(${pgArray(workflowIds)}::uuid[])`)
          ) {
            namesById.set(row.id, row.name)
          }
        }
        const data = page.map((row): ActivityItem => ({
          id: row.id,
          type: row.type,
          occurredAt: row.at_key,
          ...(row.type === "event" && row.event !== null ? { event: row.event } : {}),
          ...(row.contact_id ? { contact: { id: row.contact_id, email: contactsById.get(row.contact_id) ?? null } } : {}),
          ...(row.subject !== null ? { subject: row.subject } : {}),
          ...(row.campaign_id ? { campaign: { id: row.campaign_id, name: namesById.get(row.campaign_id) ?? null } } : {}),
          ...(row.workflow_id ? { workflow: { id: row.workflow_id, name: namesById.get(row.workflow_id) ?? null } } : {}),
          data: row.data ?? {}
        }))
        const last = page.at(-1)
        return { data, cursor: hasMore && last ? encodeCursor([last.at_key, last.id]) : null, hasMore }
      }, mapSqlError)

      /** Items per type counted from the raw tables over a short stretch (the ends of a range). */
      const rawCounts = (projectId: string, from: number | null, to: number | null, exclusiveFrom: boolean) =>
        Effect.gen(function*() {
          const bounds = (column: string) =>
            sql.and([
              from === null
                ? sql`true`
                : exclusiveFrom
                ? sql`${sql.literal(column)} > ${iso(from)}::timestamptz`
                : sql`${sql.literal(column)} >= ${iso(from)}::timestamptz`,
              to === null ? sql`true` : sql`${sql.literal(column)} < ${iso(to)}::timestamptz`
            ])
          const rows = yield* decodeRows(TypeCountRow)(sql`
            SELECT type, count(*)::float8 AS n FROM (
              SELECT ms_activity_type(name) AS type FROM events WHERE project_id = ${projectId} AND ${bounds("created_at")}
              UNION ALL
              SELECT 'contact.created' FROM contacts WHERE project_id = ${projectId} AND ${bounds("created_at")}
              UNION ALL
              SELECT type FROM activity_log WHERE project_id = ${projectId} AND ${bounds("occurred_at")}
            ) items GROUP BY type`)
          return new Map(rows.map((row) => [row.type, row.n]))
        })

      const counts = Effect.fn("Activity.counts")(
        function*(projectId: string, from: number | null, to: number | null, exclusiveFrom = false) {
          const quarter = GRAIN_MS[15]
          // The rollups cover whole quarter hours; what lies before the first or after the last is counted raw.
          const inner = {
            from: from === null
              ? null
              : exclusiveFrom
              ? Math.floor(from / quarter) * quarter + quarter
              : Math.ceil(from / quarter) * quarter,
            to: to === null ? null : Math.floor(to / quarter) * quarter
          }
          const parts: Array<Map<string, number>> = []
          if (inner.from !== null && inner.to !== null && inner.from >= inner.to) {
            parts.push(yield* rawCounts(projectId, from, to, exclusiveFrom))
          } else {
            parts.push(yield* analytics.counterTotals(projectId, "type", "ALL", inner.from, inner.to))
            if (from !== null && inner.from !== from) parts.push(yield* rawCounts(projectId, from, inner.from, exclusiveFrom))
            if (to !== null && inner.to !== to) parts.push(yield* rawCounts(projectId, inner.to, to, false))
          }
          const total = new Map<ActivityType, number>(ACTIVITY_TYPES.map((type) => [type, 0]))
          for (const part of parts) {
            for (const [type, n] of part)
              if (total.has(type as ActivityType))
                total.set(type as ActivityType, total.get(type as ActivityType)! + n)
          }
          return total
        },
        mapSqlError
      )

      const upcoming = Effect.fn("Activity.upcoming")(function*(projectId: string, hours: number, limit: number) {
        // Due within `hours` of the Clock's now (not the database's), like every other instant here.
        const until = iso((yield* Clock.currentTimeMillis) + hours * 3_600_000)
        const rows = yield* decodeRows(UpcomingRow)(sql`
          SELECT type, due_at, campaign_id, campaign_name, workflow_id, workflow_name, contact_id, contact_email,
                 step_id, step_name, step_type, execution_id
          FROM (
            SELECT 'campaign.scheduled' AS type, c.scheduled_for AS due_at, c.id AS campaign_id, c.name AS campaign_name,
                   NULL::uuid AS workflow_id, NULL AS workflow_name, NULL::uuid AS contact_id, NULL AS contact_email,
                   NULL::uuid AS step_id, NULL AS step_name, NULL AS step_type, NULL::uuid AS execution_id
            FROM campaigns c
            WHERE c.project_id = ${projectId} AND c.status = 'SCHEDULED' AND c.scheduled_for < ${until}::timestamptz
            UNION ALL
            SELECT CASE WHEN s.type = 'DELAY' THEN 'workflow.delay' ELSE 'workflow.timeout' END, t.due_at, NULL, NULL,
                   w.id, w.name, x.contact_id, ct.email, s.id, s.name, s.type, x.id
            FROM workflow_timers t
            JOIN workflow_executions x ON x.id = t.execution_id AND x.status IN ('RUNNING', 'WAITING')
            JOIN workflows w ON w.id = x.workflow_id AND w.project_id = ${projectId}
            LEFT JOIN workflow_steps s ON s.id = t.step_id
            LEFT JOIN contacts ct ON ct.id = x.contact_id AND ct.project_id = ${projectId}
            WHERE t.project_id = ${projectId} AND t.due_at < ${until}::timestamptz
          ) due ORDER BY due_at, type LIMIT ${limit}`)
        return rows.map((row): UpcomingItem => ({
          type: row.type,
          dueAt: row.due_at,
          ...(row.campaign_id ? { campaign: { id: row.campaign_id, name: row.campaign_name ?? "" } } : {}),
          ...(row.workflow_id ? { workflow: { id: row.workflow_id, name: row.workflow_name ?? "" } } : {}),
          ...(row.contact_id ? { contact: { id: row.contact_id, email: row.contact_email } } : {}),
          ...(row.step_id ? { step: { id: row.step_id, name: row.step_name ?? "", type: row.step_type ?? "" } } : {}),
          ...(row.execution_id ? { executionId: row.execution_id } : {})
        }))
      }, mapSqlError)

      return Activity.of({ feed, counts, upcoming })
    })
  )
}
