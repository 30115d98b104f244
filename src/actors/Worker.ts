/**
 * The worker role: leases partitions of stream IN, consumes each leased partition with its own durable
 * pull consumer, and hands messages to project actors.
 *
 * Leases live in Postgres (`partition_leases`): a lease has an owner, an expiry renewed every
 * HEARTBEAT, and a fencing epoch bumped on every takeover; the actor's transaction share-locks the
 * lease row and checks owner and epoch, so a worker that lost its lease cannot commit. Workers
 * register in `workers`; each takes ceil(P / live workers) partitions, releasing extras when others
 * join. A dead worker's leases expire after LEASE_TTL and are taken at the next heartbeat (< 10 s).
 *
 * On every acquisition the partition's consumer is recreated to start right after the partition's
 * stored watermark, so no message is skipped whatever the previous owner had delivered; messages a
 * project already applied are skipped by its stored offset.
 */
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream"
import { Duration, Effect, Fiber, Layer, Queue, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { hostname } from "node:os"
import { randomBytes } from "node:crypto"
import { clockNow } from "../lib/clock.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { Nats } from "../stream/Nats.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import type { InMessage } from "./messages.ts"
import { makeProjectActors, PartitionRun } from "./ProjectActors.ts"
import { fireSegmentTimers } from "./segmentTimers.ts"
import { makeSender } from "../mail/Sender.ts"
import { Domains } from "../store/Domains.ts"
import { Campaigns } from "../store/Campaigns.ts"
import { AppConfig } from "../config.ts"
import { fireWorkflowTimers, TIMERS_PER_ROUND } from "../workflows/timers.ts"
import { makeWebhookRunner } from "../workflows/webhooks.ts"
import { WorkflowRuntime } from "../workflows/Runtime.ts"

const HEARTBEAT = Duration.seconds(2)
const LEASE_TTL_SECONDS = 6
const WORKER_DEAD_SECONDS = 6
/** How often due timers are looked for (an indexed query): the worst-case lateness of a time boundary. */
const TIMER_POLL = Duration.millis(50)
/** How often scheduled campaigns due are looked for: the worst-case lateness of a scheduled send. */
const CAMPAIGN_POLL = Duration.millis(500)
/** How often owned partitions are searched for mail due (retries after backoff, missed wake-ups). */
const MAIL_SWEEP = Duration.seconds(1)
/** How often WEBHOOK steps due (retries after backoff, missed wake-ups) are looked for. */
const WEBHOOK_SWEEP = Duration.millis(500)
/** How often domains due for their DNS re-check (DOMAIN_RECHECK_SECONDS) are looked for, at most. */
const DOMAIN_CHECK_POLL_SECONDS = 30

export const WorkerLive = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const nats = yield* Nats
  const workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`
  const relay = yield* OutboxRelay
  const runs = new Map<number, { run: PartitionRun; fiber: Fiber.Fiber<void, unknown> }>()
  const sender = yield* makeSender({
    names: nats.names,
    partitions: nats.partitions,
    isOwned: (partition) => runs.has(partition),
    wakeRelay: relay.wake
  })
  const config = yield* AppConfig
  const actors = yield* makeProjectActors({
    workerId,
    names: nats.names,
    partitions: nats.partitions,
    wakeRelay: relay.wake,
    wakeSender: sender.wake
  })
  const webhooks = yield* makeWebhookRunner({ names: nats.names, wakeRelay: relay.wake })
  const consumerName = (partition: number) => `${nats.prefix}_part_${partition}`

  yield* sql`INSERT INTO partition_leases (partition)
             SELECT generate_series(0, ${nats.partitions - 1}) ON CONFLICT DO NOTHING`
  yield* sql`INSERT INTO partition_state (partition)
             SELECT generate_series(0, ${nats.partitions - 1}) ON CONFLICT DO NOTHING`

  /** Recreates the partition's durable consumer at the watermark and feeds its messages to actors. */
  const consume = (run: PartitionRun) =>
    Effect.gen(function*() {
      const stream = nats.names.inStream
      const name = consumerName(run.partition)
      yield* Effect.tryPromise(async () => {
        await nats.jsm.consumers.delete(stream, name).catch(() => undefined)
        await nats.jsm.consumers.add(stream, {
          durable_name: name,
          filter_subject: `${nats.prefix}.in.${run.partition}.>`,
          ack_policy: AckPolicy.Explicit,
          ack_wait: 60 * 1_000_000_000,
          max_ack_pending: 20_000,
          ...(run.watermark > 0
            ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: run.watermark + 1 }
            : { deliver_policy: DeliverPolicy.All })
        })
      })
      const messages = yield* Effect.acquireRelease(
        Effect.tryPromise(async () => (await nats.js.consumers.get(stream, name)).consume({ max_messages: 2_000 })),
        // close() waits for the outstanding pull to expire (up to 30 s); shutdown must not.
        (iterator) =>
          Effect.promise(() => iterator.close().catch(() => undefined)).pipe(Effect.timeout("1 second"), Effect.ignore)
      )
      yield* Stream.fromAsyncIterable(messages, (error) => error).pipe(
        Stream.runForEach((message: JsMsg) => {
          const seq = message.seq
          if (seq <= run.watermark) {
            message.ack()
            return Effect.void
          }
          run.delivered(seq)
          let body: InMessage
          try {
            body = message.json<InMessage>()
            if (typeof body?.projectId !== "string") throw new Error("message without projectId")
          } catch (error) {
            // Unreadable messages would block the partition forever: record, ack and move on.
            message.ack()
            run.applied(seq)
            return Effect.logError("dropping unreadable stream message", { seq, subject: message.subject, error: String(error) })
          }
          return actors.deliver({ delivered: { seq, partition: run.partition, body }, message, run })
        })
      )
    }).pipe(Effect.scoped)

  const start = (partition: number, epoch: number, watermark: number) =>
    Effect.gen(function*() {
      const run = new PartitionRun(partition, epoch, watermark)
      // A consumer that fails (NATS restarting, consumer deleted by a new owner) is retried while leased.
      const fiber = yield* consume(run).pipe(
        Effect.tapCause((cause) => Effect.logWarning("partition consumer stopped; restarting", { partition }, cause)),
        Effect.retry(Schedule.spaced(Duration.seconds(1))),
        Effect.ignore,
        Effect.forkDetach
      )
      runs.set(partition, { run, fiber })
      yield* sender.recoverPartition(partition)
      yield* sender.sweep([partition])
      yield* webhooks.recoverPartition(partition)
      yield* Effect.logInfo("partition acquired", { partition, epoch, watermark })
    })

  const stop = (partition: number) =>
    Effect.gen(function*() {
      const entry = runs.get(partition)
      if (!entry) return
      runs.delete(partition)
      entry.run.stopped = true
      yield* Fiber.interrupt(entry.fiber)
      yield* actors.stopPartition(entry.run)
      WorkerMetrics.partitionLag.remove({ partition })
    })

  const release = (partitions: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      if (partitions.length === 0) return
      const watermarks = new Map(partitions.map((partition) => [partition, runs.get(partition)?.run.watermark ?? 0]))
      for (const partition of partitions) yield* stop(partition)
      // Expire the lease (the next owner bumps the epoch) without touching the lease row itself: an
      // update of that row would queue behind batch transactions still share-locking it.
      for (const [partition, seq] of watermarks) {
        yield* sql`
          UPDATE partition_state s SET expires_at = '-infinity', applied_seq = GREATEST(s.applied_seq, ${seq})
          FROM partition_leases l
          WHERE s.partition = ${partition} AND l.partition = s.partition AND l.owner = ${workerId}`
      }
      yield* Effect.logInfo("partitions released", { partitions })
    })

  const rebalance = Effect.gen(function*() {
    yield* sql`INSERT INTO workers (id, heartbeat_at) VALUES (${workerId}, now())
               ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`
    yield* sql`DELETE FROM workers WHERE heartbeat_at < now() - make_interval(secs => ${WORKER_DEAD_SECONDS * 3})`
    const [live] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM workers WHERE heartbeat_at > now() - make_interval(secs => ${WORKER_DEAD_SECONDS})`
    const share = Math.ceil(nats.partitions / Math.max(1, live?.n ?? 1))

    // Persist each partition's watermark (where a new owner starts reading), fenced by the epoch.
    const watermarks = [...runs.values()].map(({ run }) => ({ partition: run.partition, epoch: run.epoch, seq: run.watermark }))
    if (watermarks.length > 0) {
      yield* sql`
        UPDATE partition_state s SET applied_seq = GREATEST(s.applied_seq, x.seq)
        FROM jsonb_to_recordset(${JSON.stringify(watermarks)}::jsonb) AS x(partition int, epoch bigint, seq bigint),
             partition_leases l
        WHERE s.partition = x.partition AND l.partition = x.partition AND l.owner = ${workerId} AND l.epoch = x.epoch`
    }
    // Only leases still alive are renewed: a released or expired one is up for grabs.
    const renewed = yield* sql<{ partition: number; epoch: string }>`
      UPDATE partition_state s SET expires_at = now() + make_interval(secs => ${LEASE_TTL_SECONDS})
      FROM partition_leases l
      WHERE l.partition = s.partition AND l.owner = ${workerId} AND s.expires_at > now()
      RETURNING s.partition, l.epoch`
    const held = new Map(renewed.map((row) => [row.partition, Number(row.epoch)]))
    // Lost: leased here but taken by someone else (we were too slow to renew).
    for (const [partition, { run }] of runs) {
      if (held.get(partition) !== run.epoch) yield* stop(partition)
    }
    if (held.size > share) {
      yield* release([...held.keys()].sort((a, b) => b - a).slice(0, held.size - share))
    } else if (held.size < share) {
      // A partition still share-locked by its old owner's in-flight batch is skipped until that commits.
      const acquired = yield* sql<{ partition: number; epoch: string; applied_seq: string }>`
        WITH free AS (
          SELECT l.partition FROM partition_leases l JOIN partition_state s ON s.partition = l.partition
          WHERE l.owner IS NULL OR s.expires_at < now()
          ORDER BY l.partition
          LIMIT ${share - held.size}
          FOR UPDATE OF l SKIP LOCKED
        ), taken AS (
          UPDATE partition_leases l SET owner = ${workerId}, epoch = l.epoch + 1
          FROM free WHERE l.partition = free.partition
          RETURNING l.partition, l.epoch
        ), renewed AS (
          UPDATE partition_state s SET expires_at = now() + make_interval(secs => ${LEASE_TTL_SECONDS})
          FROM taken WHERE s.partition = taken.partition
          RETURNING s.partition, s.applied_seq
        )
        SELECT taken.partition, taken.epoch, renewed.applied_seq FROM taken JOIN renewed ON renewed.partition = taken.partition`
      for (const row of acquired) yield* start(row.partition, Number(row.epoch), Number(row.applied_seq))
    }
    WorkerMetrics.partitionsOwned.set(runs.size)
  })

  // Durable segment timers of the partitions leased here, due by this worker's clock (segmentTimers.ts).
  const fireTimers = Effect.suspend(() => fireSegmentTimers(nats, [...runs.keys()]))

  yield* fireTimers.pipe(
    Effect.tapCause((cause) => Effect.logWarning("timer scheduler failed; retrying", cause)),
    Effect.ignore,
    Effect.repeat(Schedule.spaced(TIMER_POLL)),
    Effect.forkScoped
  )

  // Scheduled campaigns are durable timers: due ones (by this worker's clock) start sending.
  const campaigns = yield* Campaigns
  yield* Effect.suspend(() => campaigns.startDue([...runs.keys()], new Date(clockNow()))).pipe(
    Effect.tap((started) => (started > 0 ? relay.wake : Effect.void)),
    Effect.tapCause((cause) => Effect.logWarning("scheduled campaign check failed; retrying", cause)),
    Effect.ignore,
    Effect.repeat(Schedule.spaced(CAMPAIGN_POLL)),
    Effect.forkScoped
  )

  yield* Effect.suspend(() => sender.sweep([...runs.keys()])).pipe(
    Effect.tapCause((cause) => Effect.logWarning("mail sweep failed; retrying", cause)),
    Effect.ignore,
    Effect.repeat(Schedule.spaced(MAIL_SWEEP)),
    Effect.forkScoped
  )

  const domains = yield* Domains
  yield* domains.checkDue(50).pipe(
    Effect.tapCause((cause) => Effect.logWarning("domain re-check failed", cause)),
    Effect.ignore,
    Effect.repeat(Schedule.spaced(Duration.seconds(Math.max(1, Math.min(DOMAIN_CHECK_POLL_SECONDS, config.domainRecheckSeconds / 2))))),
    Effect.forkScoped
  )

  // Workflows: due DELAY / WAIT_FOR_EVENT timers go back into their partitions (at once again while a
  // round was full), and recorded WEBHOOK steps are performed (woken by actors, swept for retries).
  yield* Effect.suspend(() => fireWorkflowTimers(nats, [...runs.keys()])).pipe(
    Effect.tapCause((cause) => Effect.logWarning("workflow timer scheduler failed; retrying", cause)),
    Effect.orElseSucceed(() => 0),
    Effect.flatMap((fired) => (fired >= TIMERS_PER_ROUND ? Effect.void : Effect.sleep(TIMER_POLL))),
    Effect.forever,
    Effect.forkScoped
  )
  const workflowRuntime = yield* WorkflowRuntime
  yield* Effect.suspend(() => webhooks.sweep([...runs.keys()])).pipe(
    Effect.tapCause((cause) => Effect.logWarning("webhook sweep failed; retrying", cause)),
    Effect.ignore,
    Effect.andThen(Effect.raceFirst(Queue.take(workflowRuntime.webhookWakeups), Effect.sleep(WEBHOOK_SWEEP))),
    Effect.forever,
    Effect.forkScoped
  )

  const reportLag = () => Effect.forEach([...runs.keys()], (partition) =>
    Effect.tryPromise(() => nats.jsm.consumers.info(nats.names.inStream, consumerName(partition))).pipe(
      Effect.tap((info) =>
        Effect.sync(() => WorkerMetrics.partitionLag.set(info.num_pending + info.num_ack_pending, { partition }))),
      Effect.ignore
    ), { discard: true })

  yield* rebalance.pipe(
    Effect.tapCause((cause) => Effect.logWarning("lease heartbeat failed", cause)),
    Effect.ignore,
    Effect.andThen(Effect.suspend(reportLag)),
    Effect.repeat(Schedule.spaced(HEARTBEAT)),
    Effect.forkScoped
  )

  // On shutdown hand the partitions over at once rather than after the lease expires.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* release([...runs.keys()])
      yield* actors.stopAll
      yield* sql`DELETE FROM workers WHERE id = ${workerId}`
    }).pipe(Effect.ignore)
  )
  yield* Effect.logInfo("worker started", { workerId })
}))
