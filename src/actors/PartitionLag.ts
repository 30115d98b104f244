/**
 * Lag for /metrics: the messages waiting per partition leased here (its lane messages and its envelopes
 * not yet split), read from NATS (a request per partition and feed) every LAG_REPORT, and at once for
 * partitions just taken (PartitionLeases.ts).
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { Nats } from "../stream/Nats.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { PartitionFeeds } from "./PartitionFeeds.ts"

const LAG_REPORT = Duration.seconds(15)

export class PartitionLag extends Context.Service<PartitionLag, {
  /** Reads and sets the lag of every partition leased now. */
  readonly report: Effect.Effect<void>
}>()("app/actors/PartitionLag") {
  static readonly layer = Layer.effect(
    PartitionLag,
    Effect.gen(function*() {
      const nats = yield* Nats
      const { partitions } = yield* OwnedPartitions
      const feeds = yield* PartitionFeeds
      const report = Effect.suspend(() =>
        Effect.forEach(
          partitions(),
          (partition) =>
            Effect.forEach(["lanes", "ingest"] as const, (feed) =>
              Effect.tryPromise(() =>
                nats.jsm.consumers.info(nats.names.inStream, feeds.consumerName(partition, feed))
              ).pipe(
                Effect.map((info) => info.num_pending + info.num_ack_pending),
                Effect.orElseSucceed(() => 0)
              )).pipe(
                Effect.tap((waiting) => Effect.sync(() => WorkerMetrics.partitionLag.set(waiting[0]! + waiting[1]!, { partition })))
              ),
          { discard: true, concurrency: 8 }
        )
      )
      return PartitionLag.of({ report })
    })
  )
}

/** The periodic report (a job of its own, so it stops with the scheduled work, before the leases are handed over). */
export const LagReportsLive = Layer.effectDiscard(Effect.gen(function*() {
  const { report } = yield* PartitionLag
  yield* report.pipe(Effect.repeat(Schedule.spaced(LAG_REPORT)), Effect.forkScoped)
}))
