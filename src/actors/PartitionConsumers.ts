/**
 * The consumers of each partition leased here (PartitionFeeds.ts): its legacy consumer while legacy
 * subjects are read, and once the upgrade to lanes drained (upgrade.ts) its lane consumer and the
 * ingest splitter that feeds the lanes, started at the partition's watermarks; the actors of its lanes
 * with backfills left start at once. Stopping a partition stops its consumers, then its actors.
 */
import { Context, Duration, Effect, Fiber, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { partitionWatermarksSql } from "../store/engine/leases.ts"
import { Outbox } from "../stream/Outbox.ts"
import { lanesWithBackfillsLeft } from "./backfillsLeft.ts"
import { LaneActors } from "./LaneActors.ts"
import { type Consumption, type Owned, OwnedPartitions } from "./OwnedPartitions.ts"
import { PartitionFeeds } from "./PartitionFeeds.ts"
import { StreamUpgrade } from "./upgrade.ts"

/** Where a partition's consumers start: right after these sequences of its lane, ingest and legacy feeds. */
export interface Watermarks {
  readonly lanes: number
  readonly ingest: number
  readonly legacy: number
}

export class PartitionConsumers extends Context.Service<PartitionConsumers, {
  /** Starts the consumers of a partition just leased (its entry, already owned) at its watermarks. */
  readonly start: (partition: number, entry: Owned, marks: Watermarks) => Effect.Effect<void>
  /**
   * Stops the consumers of partitions no longer leased here (all at once: closing one may take a
   * second), then their actors: with `finishWithin` a batch in flight commits first, else it rolls back.
   */
  readonly stop: (entries: ReadonlyArray<Owned>, finishWithin?: Duration.Input) => Effect.Effect<void>
  /** Follows the upgrade; partitions drained since they were taken get their lane consumers and splitters now. */
  readonly followUpgrade: Effect.Effect<void, SqlError.SqlError>
}>()("app/actors/PartitionConsumers") {
  static readonly layer = Layer.effect(
    PartitionConsumers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const actors = yield* LaneActors
      const feeds = yield* PartitionFeeds
      const upgrade = yield* StreamUpgrade
      const { owned } = yield* OwnedPartitions

      /** Starts the actors of the partition's lanes that have backfills left (see backfillsLeft.ts). */
      const resumeBackfills = (partition: number, lanesFeed: Consumption) =>
        lanesWithBackfillsLeft(outbox.lanes, partition).pipe(
          Effect.flatMap((left) =>
            Effect.forEach(left, (row) => actors.resumeBackfills(row.project_id, row.lane, lanesFeed.run), { discard: true })
          ),
          // Not fatal to the partition: the lanes' next messages load their backfills anyway.
          Effect.catchCause((cause) => Effect.logWarning("could not resume the partition's backfills", { partition }, cause)),
          Effect.provideService(SqlClient.SqlClient, sql)
        )

      const startLanes = (partition: number, entry: Owned, marks: Omit<Watermarks, "legacy">) =>
        Effect.gen(function*() {
          entry.lanes = yield* feeds.start(partition, entry.epoch, marks.lanes, "lanes")
          entry.ingest = yield* feeds.start(partition, entry.epoch, marks.ingest, "ingest")
          yield* resumeBackfills(partition, entry.lanes)
        })

      const start = Effect.fn("PartitionConsumers.start")(function*(partition: number, entry: Owned, marks: Watermarks) {
        if (upgrade.readLegacy()) entry.legacy = yield* feeds.start(partition, entry.epoch, marks.legacy, "legacy")
        if (upgrade.drained()) yield* startLanes(partition, entry, marks)
      })

      const stop = Effect.fn("PartitionConsumers.stop")(function*(entries: ReadonlyArray<Owned>, finishWithin?: Duration.Input) {
        const running = entries.flatMap((entry) => [entry.lanes, entry.ingest, entry.legacy].filter((feed) => feed !== undefined))
        for (const feed of running) feed.run.stopped = true
        yield* Effect.forEach(running, (feed) => Fiber.interrupt(feed.fiber), { concurrency: "unbounded", discard: true })
        yield* Effect.forEach(running, (feed) => actors.stopPartition(feed.run, finishWithin), { concurrency: "unbounded", discard: true })
      })

      const followUpgrade = Effect.gen(function*() {
        yield* upgrade.follow
        if (!upgrade.drained()) return
        for (const [partition, entry] of owned) {
          if (entry.lanes) continue
          const [state] = yield* partitionWatermarksSql(sql, partition)
          yield* startLanes(partition, entry, { lanes: Number(state?.lane_seq ?? 0), ingest: Number(state?.ingest_seq ?? 0) })
        }
      })

      return PartitionConsumers.of({ start, stop, followUpgrade })
    })
  )
}
