/** The engine's event SQL: events stored with their per-contact aggregates, deleted by name, counted in the analytics rollups. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { contactInLane } from "./lanes.ts"

/** An event row to store, attached to its contact's authoritative id. */
export interface EventRow {
  readonly id: string
  readonly contactId: string
  readonly name: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

/**
 * SQL: CTEs `input`, `ins` (the events stored now; ids already stored are skipped: RETURNING id, contact_id,
 * name, created_at) and `agg` (the inserted ones folded into their per-contact aggregates), for a WITH list.
 */
export const storeEventsCtes = (sql: SqlClient.SqlClient, projectId: string, events: ReadonlyArray<EventRow>) =>
  sql`
  input AS (
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(events)}::jsonb)
      AS x(id uuid, "contactId" uuid, name text, data jsonb, at timestamptz)
  ), ins AS (
    INSERT INTO events (id, project_id, contact_id, name, data, created_at)
    SELECT id, ${projectId}, "contactId", name, COALESCE(data, '{}'::jsonb), at FROM input
    ON CONFLICT (id) DO NOTHING
    RETURNING id, contact_id, name, created_at
  ), agg AS (
    INSERT INTO event_aggregates (project_id, contact_id, name, count, first_at, last_at)
    SELECT ${projectId}, contact_id, name, count(*), min(created_at), max(created_at) FROM ins
    GROUP BY contact_id, name
    ON CONFLICT (project_id, contact_id, name) DO UPDATE SET
      count = event_aggregates.count + EXCLUDED.count,
      first_at = LEAST(event_aggregates.first_at, EXCLUDED.first_at),
      last_at = GREATEST(event_aggregates.last_at, EXCLUDED.last_at)
    RETURNING 1
  )`

/** Inserts events (ids already stored are skipped), folds the inserted ones into the aggregates, returns their ids. */
export const insertEvents = Effect.fnUntraced(function*(projectId: string, events: ReadonlyArray<EventRow>) {
  const sql = yield* SqlClient.SqlClient
  const inserted = yield* sql<{ id: string }>`
    WITH ${storeEventsCtes(sql, projectId, events)}
    SELECT id FROM ins`
  return new Set(inserted.map((row) => row.id))
})

/** Deletes the events of a name and their aggregates, of the lane's contacts (each lane deletes its own). */
export const deleteEventsNamed = Effect.fnUntraced(
  function*(projectId: string, name: string, lane: number | undefined, laneCount: number) {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM events WHERE project_id = ${projectId} AND name = ${name} AND ${
      contactInLane(sql, "contact_id", lane, laneCount)
    }`
    yield* sql`DELETE FROM event_aggregates WHERE project_id = ${projectId} AND name = ${name}
                     AND ${contactInLane(sql, "contact_id", lane, laneCount)}`
  }
)

/**
 * SQL: CTEs that add the `ins` events (storeEventsCtes) to the analytics counters, as the events insert
 * trigger would (per activity type, and per name for tracked events; 15-minute buckets for types, hours
 * and days for both), and mark the statement so that trigger skips its rows.
 */
export const rollupsCountedSql = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`
  rollups_counted AS (SELECT set_config('mailstream.rollups_counted', statement_timestamp()::text, true) AS marker),
  rolled AS (
    INSERT INTO analytics_counters AS r (project_id, kind, stream, grain, bucket, key, shard, n)
    SELECT ${projectId}::uuid, c.kind, 'ALL', g.grain, date_bin(make_interval(mins => g.grain), i.created_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'),
           left(c.key, 500), ms_rollup_shard(), count(*)
    FROM ins i
    CROSS JOIN LATERAL (VALUES ('type', ms_activity_type(i.name)),
                               ('event', CASE WHEN ms_activity_type(i.name) = 'event' THEN i.name END)) c(kind, key)
    CROSS JOIN (VALUES (15::smallint), (60::smallint), (1440::smallint)) g(grain)
    WHERE c.key IS NOT NULL AND (g.grain <> 15 OR c.kind = 'type') AND (SELECT marker FROM rollups_counted) IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6
    ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (project_id, kind, stream, grain, bucket, key, shard) DO UPDATE SET n = r.n + EXCLUDED.n
    RETURNING 1
  )`
