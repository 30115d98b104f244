/**
 * The engine's reads of what segments read about contacts (their row, event aggregates, windowed occurrence
 * times, memberships), as rows of one shape (FactRow), for a batch's head statement or on their own.
 */
import type { SqlClient, Statement } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"

/** One row of the facts read: a contact (c), an event aggregate (a), an event's time (t) or its memberships (m). */
export interface FactRow {
  readonly kind: "c" | "a" | "t" | "m"
  readonly contact_id: string
  /** The contact's email, the event's name, or the ids of the segments it is in (comma-separated). */
  readonly name: string
  readonly count: string | number | bigint | null
  /** Epoch milliseconds: created / first / occurred at. */
  readonly t1: number | string | null
  /** Epoch milliseconds: updated / last at. */
  readonly t2: number | string | null
  readonly subscribed: boolean | null
  readonly data: unknown
}

/**
 * A timestamptz column as epoch milliseconds (float8, truncated to the millisecond as a parsed time is):
 * cheaper to produce and to read than a formatted time.
 */
export const epochMs = (sql: SqlClient.SqlClient, column: string) => sql`floor(extract(epoch FROM ${sql.literal(column)}) * 1000)::float8`

/**
 * SQL: the aggregate (a), occurrence time (t) and membership (m) rows of the contacts `contactIds` lists
 * (a FROM item of one uuid column: a subquery or `unnest(...)`), in FactRow's columns (and a null `pins`),
 * to be UNIONed after the contacts' own rows; none when `wanted` is false.
 *
 * Each table is read per contact through its index: a LATERAL subquery with OFFSET 0 is not flattened
 * into a join, so the planner cannot trade the lookups for a hash join over the project's whole table.
 * It did, as batches grew past ~200 contacts (a backlog after a burst): every membership of the project
 * scanned, ~130 ms instead of ~1 ms, which slowed the lane and grew its next batch further.
 */
export const factRowsSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  contactIds: Statement.Fragment,
  wanted: boolean,
  eventNames: ReadonlySet<string>,
  windowedNames: ReadonlySet<string>,
  /** Occurrences at or before this time (ms) are not read (windowedSince); undefined reads them all. */
  since: number | undefined
) =>
  sql`
    SELECT 'a', a.contact_id, a.name, a.count, a.t1, a.t2, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      SELECT contact_id, name, count, ${epochMs(sql, "first_at")} AS t1, ${epochMs(sql, "last_at")} AS t2
      FROM event_aggregates
      WHERE project_id = ${projectId} AND contact_id = k.id AND name = ANY(${pgArray([...eventNames])}::text[])
      OFFSET 0
    ) a
    WHERE ${wanted && eventNames.size > 0}
    UNION ALL
    SELECT 't', t.contact_id, t.name, NULL, t.t1, NULL, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      SELECT contact_id, name, ${epochMs(sql, "created_at")} AS t1
      FROM events
      WHERE project_id = ${projectId} AND contact_id = k.id AND name = ANY(${pgArray([...windowedNames])}::text[])
        AND created_at > ${since === undefined ? "-infinity" : new Date(since).toISOString()}::timestamptz
      OFFSET 0
    ) t
    WHERE ${wanted && windowedNames.size > 0}
    UNION ALL
    SELECT 'm', k.id, m.ids, NULL, NULL, NULL, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      -- One row per contact, its segments joined by commas: a contact is in dozens of segments, and a
      -- row each cost Postgres and the worker more than the lookup.
      SELECT string_agg(segment_id::text, ',') AS ids FROM segment_memberships
      WHERE contact_id = k.id AND exited_at IS NULL AND project_id = ${projectId}
    ) m
    WHERE ${wanted} AND m.ids IS NOT NULL`

/**
 * SQL, one round trip: the contacts, their aggregates of the events read, the occurrence times of the
 * windowed counts and their memberships, as rows of one shape (`kind` says which). Plain columns and
 * times as epoch milliseconds: building a JSON object per row cost Postgres about twice the read.
 */
export const factsSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  contactIds: ReadonlyArray<string>,
  eventNames: ReadonlySet<string>,
  windowedNames: ReadonlySet<string>,
  since: number | undefined
) =>
  sql<FactRow>`
    SELECT 'c' AS kind, id AS contact_id, email AS name, NULL::bigint AS count, ${epochMs(sql, "created_at")} AS t1,
           ${epochMs(sql, "updated_at")} AS t2, subscribed, data, NULL::jsonb AS pins
    FROM contacts WHERE project_id = ${projectId} AND id = ANY(${pgArray(contactIds)}::uuid[])
    UNION ALL
    ${factRowsSql(sql, projectId, sql`unnest(${pgArray(contactIds)}::uuid[])`, true, eventNames, windowedNames, since)}`
