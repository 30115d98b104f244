/**
 * Which lanes of a partition still have segment backfills to do. A lane's actor runs its backfill chunks
 * between its messages and lives only while it has work; when a partition changes hands (a rebalance, a
 * worker replaced, a lease renewed too late), its new owner starts the actors of these lanes at once,
 * or a lane that gets no traffic would never finish its part (nor its segments their backfill).
 * The conditions are reloadSegments' (applyBatch.ts), per lane.
 */
import { Effect } from "effect"
import { lanesBehindOnBackfills } from "../store/engine/segments.ts"
import type { Lanes } from "../stream/lanes.ts"

export const lanesWithBackfillsLeft = Effect.fnUntraced(function*(lanes: Lanes, partition: number) {
  const rows = yield* lanesBehindOnBackfills(lanes.count)
  return rows.filter((row) => lanes.partitionOf(row.project_id, row.lane) === partition)
})
