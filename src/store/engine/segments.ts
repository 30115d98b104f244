/**
 * The engine's segment SQL: definitions read, recomputation requested (for the whole segment, or one lane's
 * contacts), and backfill progress (segment_backfills per lane; backfilled_version once every lane is done).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"
import type { toSegment } from "../Segments.ts"

/** The project's segments, oldest first, with their backfill state. */
export const segmentRows = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<
    Parameters<typeof toSegment>[0] & { backfilled_version: number; backfill_emits: boolean; backfill_generation: number }
  >`
    SELECT id, project_id, name, description, type, condition, track_membership, member_count, version,
           backfilled_version, backfill_emits, backfill_generation, created_at, updated_at
    FROM segments WHERE project_id = ${projectId} ORDER BY created_at, id`
})

/** What a lane has done of each of its project's segments' backfills. */
export const laneBackfillsDone = Effect.fnUntraced(function*(projectId: string, lane: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ segment_id: string; version: number; generation: number }>`
    SELECT b.segment_id, b.version, b.generation FROM segment_backfills b JOIN segments s ON s.id = b.segment_id
    WHERE s.project_id = ${projectId} AND b.lane = ${lane}`
})

/** The lane alone recomputes these segments for its contacts (version 0 marks it behind), durably, with entry/exit. */
export const recomputeInLane = Effect.fnUntraced(function*(lane: number, segmentIds: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
      INSERT INTO segment_backfills (segment_id, lane, version, generation)
      SELECT id, ${lane}, 0, 0 FROM unnest(${pgArray(segmentIds)}::uuid[]) AS id
      ON CONFLICT (segment_id, lane) DO UPDATE SET version = 0`
})

/** Every lane recomputes these segments of the project (a new backfill generation that emits entry/exit). */
export const recomputeSegments = Effect.fnUntraced(function*(projectId: string, segmentIds: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                               backfill_generation = backfill_generation + 1
             WHERE project_id = ${projectId} AND id = ANY(${pgArray(segmentIds)}::uuid[])`
})

/** As recomputeSegments, for one segment (a computeSegment command published before lanes). */
export const recomputeSegment = Effect.fnUntraced(function*(projectId: string, segmentId: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                             backfill_generation = backfill_generation + 1
                     WHERE id = ${segmentId} AND project_id = ${projectId}`
})

/**
 * The (project, lane) pairs with segment backfills left to do: lanes of segments with work left somewhere
 * that have not done this version and generation (the conditions are reloadSegments', per lane).
 */
export const lanesBehindOnBackfills = Effect.fnUntraced(function*(laneCount: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ project_id: string; lane: number }>`
    -- Only segments with work left somewhere (most have none), then their lanes that have not done it.
    WITH unfinished AS (
      SELECT s.id, s.project_id, s.version, s.backfill_generation, s.backfilled_version FROM segments s
      WHERE s.type = 'DYNAMIC'
        AND (s.backfilled_version < s.version
             -- a lane asked to recompute its own contacts (lane version 0)
             OR EXISTS (SELECT 1 FROM segment_backfills b WHERE b.segment_id = s.id AND b.version = 0))
    )
    SELECT DISTINCT s.project_id, l.lane
    FROM unfinished s
    CROSS JOIN generate_series(0, ${laneCount - 1}) AS l(lane)
    LEFT JOIN segment_backfills b ON b.segment_id = s.id AND b.lane = l.lane
    WHERE (s.backfilled_version < s.version OR b.version = 0)
      AND NOT (b.version IS NOT NULL AND b.version >= s.version AND b.generation >= s.backfill_generation)`
})
