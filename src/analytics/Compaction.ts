/**
 * Folds the rollups' per-connection shards of closed buckets into one row (ms_compact_rollups in
 * migrations/0013_analytics.sql), so a long range reads about one row per bucket. Run by every worker;
 * an advisory lock lets one fold at a time. Counts are exact whether or not this runs: it only shrinks reads.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { Analytics } from "../store/Analytics.ts"

/** Buckets that ended this long ago are folded (late writes to them just make a new shard row, folded next time). */
const SETTLE = Duration.minutes(2)
const EVERY = Duration.minutes(1)

export const CompactionLive = Layer.effectDiscard(Effect.gen(function*() {
  const analytics = yield* Analytics
  // The cutoff is read from the Clock on every run (an argument built once would stay at start-up time).
  const fold = Effect.flatMap(Clock.currentTimeMillis, (now) => analytics.compact(new Date(now - Duration.toMillis(SETTLE)))).pipe(
    Effect.tap((folded) => folded > 0 ? Effect.logDebug("analytics rollups folded", { rows: folded }) : Effect.void),
    Effect.catchCause((cause) => Effect.logWarning("analytics rollups could not be folded; trying again later", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(fold, Schedule.spaced(EVERY)))
})).pipe(Layer.provide(Analytics.layer))
