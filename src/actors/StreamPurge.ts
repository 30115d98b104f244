/**
 * Stream retention: streams IN and OUT keep every message until it is purged (limits retention, with
 * only STREAM_MAX_AGE_HOURS behind it as a safety limit), so every STREAM_PURGE_SECONDS a worker purges
 * what no one will read again:
 *
 * - Stream IN, per partition leased here: its lane messages below the partition's saved lane watermark,
 *   its ingest envelopes below its saved ingest watermark and below the ack floor of the event
 *   destinations' durable consumer of tracked events (`<prefix>_destinations_tracked`), and, once the
 *   upgrade to lanes drained, its legacy messages below their saved watermark. Saved, not in memory:
 *   a partition's next owner starts its consumers right after the watermarks in `partition_state`, so
 *   nothing at or above them may go, whoever holds the lease by then. (Purging below the saved ingest
 *   watermark drops envelopes whose lane messages are stored; a split redone from an older watermark
 *   is skipped by position anyway, IngestSplitter.ts.)
 * - Stream OUT, by the worker leasing partition 0: below the ack floor of the event destinations'
 *   consumer (`<prefix>_destinations`), its only durable reader (the live pages' hub reads OUT with a
 *   core NATS subscription, as messages are stored, and never replays it). Without that consumer (no
 *   worker of this release started yet), nothing is purged.
 *
 * A durable reader whose info cannot be read (NATS busy, a leader election) stops the round's purges
 * on what it reads: nothing is purged on a guess. `jsm.streams.purge(stream, { filter, seq })` drops
 * the messages on `filter` with a sequence below `seq`.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { partitionsWatermarksSql } from "../store/engine/leases.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { Nats } from "../stream/Nats.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { StreamUpgrade } from "./upgrade.ts"

/** The partition leasing stream OUT's purges (one worker at a time does them). */
const OUT_PURGER = 0

const isConsumerNotFound = (error: unknown) => error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound

export const StreamPurgeLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const nats = yield* Nats
  const { owned } = yield* OwnedPartitions
  const upgrade = yield* StreamUpgrade
  const { inStream, outStream } = nats.names
  /** Per stream and filter, the sequence last purged below: the same purge is not asked again. */
  const purgedBelow = new Map<string, number>()

  /**
   * The stream sequence below which a durable consumer acked everything, plus one: purging below it
   * loses it nothing. Infinity when it does not exist (no one to keep messages for).
   */
  const keptFrom = (stream: string, durable: string) =>
    Effect.tryPromise(async () => {
      try {
        return (await nats.jsm.consumers.info(stream, durable)).ack_floor.stream_seq + 1
      } catch (error) {
        if (isConsumerNotFound(error)) return Number.POSITIVE_INFINITY
        throw error
      }
    })

  const purge = (stream: string, filter: string, seq: number) =>
    Effect.gen(function*() {
      const key = `${stream} ${filter}`
      if (!Number.isFinite(seq) || seq <= (purgedBelow.get(key) ?? 1)) return
      const { purged } = yield* Effect.tryPromise(() => nats.jsm.streams.purge(stream, { filter, seq }))
      purgedBelow.set(key, seq)
      if (purged > 0) WorkerMetrics.streamPurged.inc(purged, { stream })
    })

  const purgeIn = Effect.gen(function*() {
    const partitions = [...owned.keys()]
    if (partitions.length === 0) return
    const tracked = yield* keptFrom(inStream, `${nats.prefix}_destinations_tracked`)
    const marks = yield* partitionsWatermarksSql(sql, partitions)
    const drained = upgrade.drained()
    for (const row of marks) {
      if (!owned.has(row.partition)) continue
      yield* purge(inStream, nats.names.laneFilter(row.partition), Number(row.lane_seq) + 1)
      yield* purge(inStream, nats.names.ingestFilter(row.partition), Math.min(Number(row.ingest_seq) + 1, tracked))
      if (drained) yield* purge(inStream, nats.names.legacyFilter(row.partition), Number(row.applied_seq) + 1)
    }
  })

  const purgeOut = Effect.gen(function*() {
    if (!owned.has(OUT_PURGER)) return
    const kept = yield* keptFrom(outStream, `${nats.prefix}_destinations`)
    // No consumer: no durable reader known yet, so nothing is known to be read (the age limit bounds OUT).
    if (Number.isFinite(kept)) yield* purge(outStream, nats.names.outAll, kept)
  })

  const every = Duration.seconds(config.streamPurgeSeconds)
  yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
    yield* Effect.sleep(every)
    yield* purgeIn.pipe(Effect.catchCause((cause) => Effect.logWarning("stream IN purge failed; tried again next period", cause)))
    yield* purgeOut.pipe(Effect.catchCause((cause) => Effect.logWarning("stream OUT purge failed; tried again next period", cause)))
  })))
}))
