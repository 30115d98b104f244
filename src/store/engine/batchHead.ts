/**
 * The head statement a lane batch's transaction starts with, in one round trip: the caller's own CTEs (lease,
 * offsets, reset watermark: share- or row-locked; laneHeadParts for one lane, combinedHeadParts for a turn's
 * lanes), the batch's contacts locked by email (in id order, as every locker does), then rows of FactRow's
 * shape: the head (h: the caller's `held` boolean and `data` object), the locked contacts (c), the batch's
 * events already stored (e), and the facts its segments read about those contacts (a, t, m; none unless
 * `facts` is given).
 */
import type { SqlClient, Statement } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"
import { epochMs, type FactRow, factRowsSql } from "./facts.ts"
import { type LeaseHolder } from "./leases.ts"
import { batchOffsetSql } from "./offsets.ts"

export type HeadRow = Omit<FactRow, "kind"> & {
  readonly kind: FactRow["kind"] | "h" | "e"
  readonly pins: Record<string, number> | string | null
}

export const batchHeadSql = (
  sql: SqlClient.SqlClient,
  input: {
    readonly projectId: string
    /** CTEs before `locked`, each `name AS (...)`, joined with commas. */
    readonly ctes: Statement.Fragment
    /** The h row's `subscribed` column (a boolean expression over the CTEs). */
    readonly held: Statement.Fragment
    /** The h row's `data` column (a jsonb expression over the CTEs). */
    readonly data: Statement.Fragment
    readonly emails: ReadonlyArray<string>
    readonly eventIds: ReadonlyArray<string>
    readonly facts:
      | ({
        readonly eventNames: ReadonlySet<string>
        readonly windowed: ReadonlySet<string>
        readonly since: number | undefined
        /** Contacts whose facts the caller has already (laneFacts.ts): not read. */
        readonly known?: ReadonlyArray<string> | undefined
      })
      | undefined
  }
) =>
  sql<HeadRow>`
    WITH ${input.ctes},
    locked AS (
      SELECT id, email, subscribed, pinned_at, data, created_at, updated_at FROM contacts
      WHERE project_id = ${input.projectId} AND email = ANY(${pgArray(input.emails)}::text[])
      ORDER BY id
      FOR UPDATE
    )
    SELECT 'h' AS kind, NULL::uuid AS contact_id, NULL::text AS name, NULL::bigint AS count, NULL::float8 AS t1,
           NULL::float8 AS t2, ${input.held} AS subscribed,
           -- No NOTIFY for the batch's outbox rows (migration 0015): its actor wakes the relay itself.
           ${input.data} || jsonb_build_object('quiet', set_config('mailstream.quiet_outbox', 'on', true)) AS data,
           NULL::jsonb AS pins
    UNION ALL
    SELECT 'c', id, email, NULL, ${epochMs(sql, "created_at")}, ${epochMs(sql, "updated_at")}, subscribed, data, pinned_at FROM locked
    UNION ALL
    SELECT 'e', id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM events WHERE id = ANY(${pgArray(input.eventIds)}::uuid[])
    UNION ALL
    ${
    factRowsSql(
      sql,
      input.projectId,
      input.facts?.known?.length
        ? sql`(SELECT id FROM locked WHERE id <> ALL(${pgArray(input.facts.known)}::uuid[]))`
        : sql`(SELECT id FROM locked)`,
      input.facts !== undefined,
      input.facts?.eventNames ?? new Set(),
      input.facts?.windowed ?? new Set(),
      input.facts?.since
    )
  }`
    // Planned for its own parameters every time: a cached generic plan cannot see how few contacts the
    // batch has. It once read the facts by hashing whole tables (103 ms a batch while contacts entered
    // their segments); with the facts read per contact it still took the track bench's cold window from
    // ~6,500 to ~450 events/s (tried in be0df0d, reverted).
    .unprepared

/**
 * The head's parts for one lane's batch: the lease (share-locked: a takeover waits for this batch), the
 * lane's offset as it was and moved past the batch (offsets.ts), and the project's reset watermark
 * (share-locked: a batch and a reset of its project wait for each other).
 */
export const laneHeadParts = (
  sql: SqlClient.SqlClient,
  holder: LeaseHolder & { readonly projectId: string; readonly lane: number | undefined },
  batchEnd: number,
  batchPos: number
) => {
  const offsets = batchOffsetSql(sql, holder.projectId, holder.lane, batchEnd, batchPos)
  return {
    ctes: sql`
        lease AS (
          SELECT 1 FROM partition_leases
          WHERE partition = ${holder.partition} AND owner = ${holder.workerId} AND epoch = ${holder.epoch}
          FOR SHARE
        ), offset_row AS (${offsets.read}), moved AS (${offsets.write} RETURNING 1),
        reset AS (SELECT data_reset_seq FROM projects WHERE id = ${holder.projectId} FOR SHARE)`,
    held: sql`EXISTS (SELECT 1 FROM lease)`,
    data: sql`jsonb_build_object(
        'applied_seq', (SELECT applied_seq FROM offset_row)::text, 'ingest_pos', (SELECT ingest_pos FROM offset_row)::text,
        'reset_seq', (SELECT data_reset_seq FROM reset)::text, 'moved', (SELECT count(*) FROM moved))`
  }
}

/**
 * The head's parts for a turn's lanes of one project: the leases the worker still holds (at their epochs,
 * share-locked), the lanes' offsets (row-locked; moved by the write, movedOffsetsCte) and the reset watermark.
 */
export const combinedHeadParts = (
  sql: SqlClient.SqlClient,
  projectId: string,
  workerId: string,
  leases: ReadonlyMap<number, number>,
  lanes: ReadonlyArray<number | undefined>
) => ({
  ctes: sql`
        lease AS (
          SELECT partition FROM partition_leases
          WHERE owner = ${workerId}
            AND (partition, epoch) IN (SELECT * FROM unnest(${pgArray([...leases.keys()].map(String))}::int[], ${
    pgArray([...leases.values()].map(String))
  }::bigint[]))
          FOR SHARE
        ), offset_rows AS (
          SELECT lane, applied_seq, ingest_pos FROM lane_offsets
          WHERE project_id = ${projectId} AND lane = ANY(${pgArray(lanes.map(String))}::int[])
          FOR UPDATE
        ), reset AS (SELECT data_reset_seq FROM projects WHERE id = ${projectId} FOR SHARE)`,
  held: sql`NULL::boolean`,
  data: sql`jsonb_build_object(
        'leases', (SELECT COALESCE(jsonb_agg(partition), '[]'::jsonb) FROM lease),
        'offsets', (SELECT COALESCE(jsonb_agg(jsonb_build_array(lane, applied_seq::text, ingest_pos::text)), '[]'::jsonb) FROM offset_rows),
        'reset_seq', (SELECT data_reset_seq FROM reset)::text)`
})
