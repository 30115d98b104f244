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
    SELECT DISTINCT s.project_id, l.lane
    FROM segments s
    CROSS JOIN generate_series(0, ${lanes.count - 1}) AS l(lane)
    LEFT JOIN segment_backfills b ON b.segment_id = s.id AND b.lane = l.lane
    WHERE s.type = 'DYNAMIC'
      -- Not done everywhere, or this lane was asked to recompute its own contacts (lane version 0) …
      AND (s.backfilled_version < s.version OR b.version = 0)
      -- … and this lane has not done this version and generation.
      AND NOT (b.version IS NOT NULL AND b.version >= s.version AND b.generation >= s.backfill_generation)`
  return rows.filter((row) => lanes.partitionOf(row.project_id, row.lane) === partition)
})
