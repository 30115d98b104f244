/**
 * Which lanes of a partition still have segment backfills to do. A lane's actor runs its backfill chunks
 * between its messages and lives only while it has work; when a partition changes hands (a rebalance, a
 * worker replaced, a lease renewed too late), its new owner starts the actors of these lanes at once,
 * or a lane that gets no traffic would never finish its part (nor its segments their backfill).
 * The conditions are reloadSegments' (applyBatch.ts), per lane.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Lanes } from "../stream/lanes.ts"

export const lanesWithBackfillsLeft = Effect.fnUntraced(function*(lanes: Lanes, partition: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ project_id: string; lane: number }>`
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
    CROSS JOIN generate_series(0, ${lanes.count - 1}) AS l(lane)
    LEFT JOIN segment_backfills b ON b.segment_id = s.id AND b.lane = l.lane
    WHERE (s.backfilled_version < s.version OR b.version = 0)
      AND NOT (b.version IS NOT NULL AND b.version >= s.version AND b.generation >= s.backfill_generation)`
  return rows.filter((row) => lanes.partitionOf(row.project_id, row.lane) === partition)
})
