/**
 * The engine's segment backfill SQL: a lane's contacts read in chunks with the SQL evaluator's answer and
 * their membership, and a lane's backfill recorded done (on the segment once every lane has done it).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Condition } from "../../domain/conditions/types.ts"
import { compileConditionSql } from "../conditionSql.ts"
import { contactInLane } from "./lanes.ts"

/** Where a backfill runs: a project's contacts, of one lane of `laneCount` (undefined: all of them). */
export interface BackfillScope {
  readonly projectId: string
  readonly lane: number | undefined
  readonly laneCount: number
}

/** Up to `limit` contacts after `cursor` (by id): whether each matches `condition` at `clock`, and whether it is a member. */
export const backfillChunkRows = Effect.fnUntraced(function*(
  scope: BackfillScope,
  segment: { readonly id: string; readonly condition: Condition },
  cursor: string,
  clock: number,
  limit: number
) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ id: string; email: string; matches: boolean; member: boolean }>`
    SELECT c.id, c.email, ${compileConditionSql(sql, segment.condition, clock)} AS matches,
           EXISTS (SELECT 1 FROM segment_memberships m WHERE m.segment_id = ${segment.id} AND m.contact_id = c.id AND m.exited_at IS NULL) AS member
    FROM contacts c
    WHERE c.project_id = ${scope.projectId} AND c.id > ${cursor}::uuid AND ${contactInLane(sql, "c.id", scope.lane, scope.laneCount)}
    ORDER BY c.id
    LIMIT ${limit}`
})

/** The first contact after `cursor` (by id), if any: the one a chunk narrowed down to a single contact fails on. */
export const nextBackfillContact = Effect.fnUntraced(function*(scope: BackfillScope, cursor: string) {
  const sql = yield* SqlClient.SqlClient
  const [contact] = yield* sql<{ id: string }>`
      SELECT id FROM contacts WHERE project_id = ${scope.projectId} AND id > ${cursor}::uuid AND ${
    contactInLane(sql, "id", scope.lane, scope.laneCount)
  }
      ORDER BY id LIMIT 1`
  return contact
})

/** The backfill of messages published before lanes (all the project's contacts) done: true when recorded on the segment. */
export const projectBackfillDone = Effect.fnUntraced(function*(segmentId: string, version: number, generation: number) {
  const sql = yield* SqlClient.SqlClient
  const done = yield* sql`UPDATE segments SET backfilled_version = GREATEST(backfilled_version, ${version})
                            WHERE id = ${segmentId} AND backfill_generation = ${generation} RETURNING id`
  return done.length > 0
})

/** A lane's part of a backfill done, recorded for the lane (then segmentBackfilledIfAllLanes). */
export const recordLaneBackfill = Effect.fnUntraced(function*(segmentId: string, lane: number, version: number, generation: number) {
  const sql = yield* SqlClient.SqlClient
  // Lanes finishing together take turns here, so the last one sees every other lane's record (NO KEY:
  // lanes hold KEY SHARE on the segment through their segment_counts rows).
  yield* sql`SELECT 1 FROM segments WHERE id = ${segmentId} FOR NO KEY UPDATE`
  yield* sql`
    INSERT INTO segment_backfills (segment_id, lane, version, generation) VALUES (${segmentId}, ${lane}, ${version}, ${generation})
    ON CONFLICT (segment_id, lane) DO UPDATE SET version = EXCLUDED.version, generation = EXCLUDED.generation`
})

/**
 * Records the backfill on the segment (backfilled_version) when every one of the `laneCount` lanes has done
 * this version and generation. Each lane checks after recording its own part, so the last lane to finish
 * (whichever it is) sees all.
 */
export const segmentBackfilledIfAllLanes = Effect.fnUntraced(
  function*(segmentId: string, laneCount: number, version: number, generation: number) {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
    UPDATE segments s SET backfilled_version = GREATEST(s.backfilled_version, ${version})
    WHERE s.id = ${segmentId} AND s.backfill_generation = ${generation} AND s.version = ${version}
      AND (SELECT count(*) FROM segment_backfills b
           WHERE b.segment_id = s.id AND b.version >= ${version} AND b.generation >= ${generation}) >= ${laneCount}`
  }
)
