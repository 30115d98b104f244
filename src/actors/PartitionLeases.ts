/**
 * The worker's partition leases. Leases live in Postgres (`partition_leases`): a lease has an owner, an
 * expiry renewed every HEARTBEAT, and a fencing epoch bumped on every takeover; the actor's transaction
 * share-locks the lease row and checks owner and epoch, so a worker that lost its lease cannot commit.
 * Workers register in `workers`; each takes ceil(P / live workers) partitions, releasing extras when
 * others join. A dead worker's leases expire after LEASE_TTL and are taken at the next heartbeat (< 10 s).
 * A worker stopping (SIGTERM) hands over at once: no more deliveries, batches in flight commit (up to
 * FINISH_WITHIN), watermarks are saved, leases expired, and the others, notified, take them.
 *
 * A partition taken starts its consumers at its stored watermarks (PartitionConsumers.ts), and takes
 * over what its previous owner left in flight: mail being sent, webhook attempts.
 */
import { Duration, Effect, Fiber, Layer, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import { makeWakeup } from "../lib/dueLoop.ts"
import { LEASES_CHANNEL, listenTo } from "../lib/notifications.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import {
  acquireLeasesSql,
  expireHeldSql,
  expireReleasedSql,
  forgetWorkerSql,
  heartbeatSql,
  notifyLeasesSql,
  renewLeasesSql,
  saveWatermarksSql,
  seedPartitions
} from "../store/engine/leases.ts"
import { Nats } from "../stream/Nats.ts"
import { WebhookRunner } from "../workflows/webhooks.ts"
import { LaneActors } from "./LaneActors.ts"
import { MailSender } from "./MailSender.ts"
import { type Owned, OwnedPartitions } from "./OwnedPartitions.ts"
import { PartitionConsumers, type Watermarks } from "./PartitionConsumers.ts"
import { PartitionLag } from "./PartitionLag.ts"
import { ScheduleWakeups } from "./ScheduleWakeups.ts"

const HEARTBEAT = Duration.seconds(2)
const LEASE_TTL_SECONDS = 6
const WORKER_DEAD_SECONDS = 6
/** On a graceful hand-over, how long batches in flight get to commit before they are rolled back. */
const FINISH_WITHIN = Duration.seconds(5)

/** The watermarks to persist for a partition leased here (fenced by the epoch when written). */
type FencedWatermarks = Watermarks & { readonly partition: number; readonly epoch: number }

const watermarksOf = (partition: number, entry: Owned): FencedWatermarks => ({
  partition,
  epoch: entry.epoch,
  lanes: entry.lanes?.run.watermark ?? 0,
  ingest: entry.ingest?.run.watermark ?? 0,
  legacy: entry.legacy?.run.watermark ?? 0
})

export const PartitionLeasesLive = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const nats = yield* Nats
  const partitions = yield* OwnedPartitions
  const { workerId, owned } = partitions
  const consumers = yield* PartitionConsumers
  const actors = yield* LaneActors
  const sender = yield* MailSender
  const webhooks = yield* WebhookRunner
  const lag = yield* PartitionLag
  const wakeups = yield* ScheduleWakeups
  /** Wakes the heartbeat: another worker released partitions or joined. */
  const leasesChanged = yield* makeWakeup
  /** Held by a heartbeat's rebalance and by the shutdown hand-over, so they never overlap. */
  const leaseLock = yield* Semaphore.make(1)
  /** Set when shutdown begins: a rebalance in progress starts no further partition (see the finalizer). */
  let stopping = false

  yield* seedPartitions(sql, nats.partitions)

  /** The watermarks last saved by a heartbeat, per partition: unchanged ones are not written again. */
  const savedWatermarks = new Map<number, string>()

  const saveWatermarks = (marks: ReadonlyArray<FencedWatermarks>) =>
    marks.length === 0 ? Effect.void : saveWatermarksSql(sql, workerId, marks).pipe(Effect.asVoid)

  /** A partition just leased: its consumers start, and what its previous owner left in flight is taken over. */
  const take = (partition: number, epoch: number, marks: Watermarks, legacyDrained: boolean) =>
    Effect.gen(function*() {
      const entry: Owned = { epoch, lanes: undefined, ingest: undefined, legacy: undefined, legacyDrained }
      partitions.add(partition, entry)
      WorkerMetrics.partitionsAcquired.inc()
      yield* consumers.start(partition, entry, marks)
      yield* sender.recoverPartition(partition)
      yield* sender.sweep([partition])
      yield* webhooks.recoverPartition(partition)
      yield* Effect.logInfo("partition acquired", { partition, epoch, ...marks })
    }).pipe(
      // Half started is not running: stopped, its lease (no longer renewed) expires and is taken again.
      Effect.onError(() => lose(partition))
    )

  /** A lease lost (taken by another worker): its batches can no longer commit, so they stop at once. */
  const lose = (partition: number) =>
    Effect.gen(function*() {
      const entry = owned.get(partition)
      if (!entry) return
      partitions.remove(partition)
      yield* consumers.stop([entry])
      WorkerMetrics.partitionLag.remove({ partition })
    })

  /** Hands partitions over: batches in flight commit, then the watermarks are saved and the leases expired. */
  const release = (released: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      const releasing = released.flatMap((partition) => {
        const entry = owned.get(partition)
        return entry ? [{ partition, entry }] : []
      })
      if (releasing.length === 0) return
      for (const { partition } of releasing) partitions.remove(partition)
      yield* consumers.stop(releasing.map(({ entry }) => entry), FINISH_WITHIN)
      yield* saveWatermarks(releasing.map(({ partition, entry }) => watermarksOf(partition, entry)))
      // Expire the lease (the next owner bumps the epoch) without touching the lease row itself: an
      // update of that row would queue behind batch transactions still share-locking it.
      yield* expireReleasedSql(sql, workerId, released)
      for (const { partition } of releasing) WorkerMetrics.partitionLag.remove({ partition })
      yield* Effect.logInfo("partitions released", { partitions: releasing.map(({ partition }) => partition) })
    })

  const rebalance = Effect.gen(function*() {
    // One statement: this worker's heartbeat, long-dead workers forgotten, and the live ones counted
    // (the count does not see the CTEs' writes: the others, plus this one).
    const [live] = yield* heartbeatSql(sql, workerId, WORKER_DEAD_SECONDS)
    const share = Math.ceil(nats.partitions / Math.max(1, live?.n ?? 1))

    // Persist each partition's watermarks that moved (where a new owner starts reading), fenced by the epoch.
    const moved = [...owned].map(([partition, entry]) => watermarksOf(partition, entry))
      .filter((marks) => savedWatermarks.get(marks.partition) !== JSON.stringify(marks))
    yield* saveWatermarks(moved)
    for (const marks of moved) savedWatermarks.set(marks.partition, JSON.stringify(marks))
    // Only leases still alive are renewed: a released or expired one is up for grabs. And only those of
    // partitions running here: one leased by a rebalance that failed before starting it (Postgres or
    // NATS went away mid-way) expires, and is taken again, rather than staying leased here unread.
    const renewed = yield* renewLeasesSql(sql, workerId, LEASE_TTL_SECONDS, owned.keys())
    const held = new Map(renewed.map((row) => [row.partition, Number(row.epoch)]))
    // Lost: leased here but taken by someone else (we were too slow to renew).
    for (const [partition, entry] of owned) {
      if (held.get(partition) !== entry.epoch) yield* lose(partition)
    }
    yield* consumers.followUpgrade
    if (held.size > share) {
      yield* release([...held.keys()].sort((a, b) => b - a).slice(0, held.size - share))
      yield* notifyLeasesSql(sql, LEASES_CHANNEL, workerId)
    } else if (held.size < share) {
      // A partition still share-locked by its old owner's in-flight batch is skipped until that commits.
      const acquired = yield* acquireLeasesSql(sql, workerId, nats.partitions, share - held.size, LEASE_TTL_SECONDS)
      for (const row of acquired) {
        // Stopping: the rest stay leased here, never started, until the finalizer expires them.
        if (stopping) break
        yield* take(
          row.partition,
          Number(row.epoch),
          { lanes: Number(row.lane_seq), ingest: Number(row.ingest_seq), legacy: Number(row.applied_seq) },
          row.legacy_drained
        )
      }
      if (acquired.length > 0) {
        yield* wakeups.all
        // The lag of partitions just taken shows at once, not at the next periodic report.
        yield* Effect.forkScoped(lag.report)
      }
    }
    WorkerMetrics.partitionsOwned.set(owned.size)
  })

  // Lease heartbeats, and a rebalance at once when another worker released partitions or joined.
  const heartbeat = yield* Effect.forkScoped(Effect.gen(function*() {
    while (true) {
      yield* leaseLock.withPermits(1)(rebalance).pipe(
        Effect.tapCause((cause) => Effect.logWarning("lease heartbeat failed", cause)),
        // Whatever the cause: a SqlError some step kept a defect (the sender's takeover) must not end the
        // heartbeats, which would leave every lease to expire and no partition to be taken again.
        Effect.ignoreCause
      )
      yield* leasesChanged.wait(Duration.toMillis(HEARTBEAT))
    }
  }))
  yield* listenTo(LEASES_CHANNEL, (from) => (from === workerId ? Effect.void : leasesChanged.signal))

  // On shutdown hand the partitions over at once rather than after the lease expires. No heartbeat
  // may run meanwhile (it would take the released partitions back): the lease lock waits out one in
  // progress, then the heartbeat stops before anything is released. The jobs composed above this one
  // in src/workerRole.ts (the scheduled work, the lag report) have stopped already.
  // A rebalance taking partitions (a worker just started takes all of them, one by one) stops after the
  // one it is starting, so a stop right after start-up does not wait for them all.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => (stopping = true)).pipe(
      Effect.andThen(
        leaseLock.withPermits(1)(Effect.gen(function*() {
          yield* Fiber.interrupt(heartbeat)
          yield* release([...owned.keys()])
          // Leased here and never started (that rebalance stopped early): expired too, nothing of theirs ran here.
          yield* expireHeldSql(sql, workerId)
          yield* actors.stopAll
          yield* forgetWorkerSql(sql, workerId)
          yield* notifyLeasesSql(sql, LEASES_CHANNEL, workerId)
          yield* Effect.logInfo("worker handed its partitions over")
        }))
      ),
      Effect.ignore
    )
  )
  // Others rebalance now rather than at their next heartbeat.
  yield* notifyLeasesSql(sql, LEASES_CHANNEL, workerId)
  yield* Effect.logInfo("worker started", { workerId })
}))
