/**
 * The worker role: leases partitions of stream IN, consumes each leased partition with its own durable
 * pull consumer, and hands messages to lane actors (one per lane of a project, see stream/lanes.ts).
 *
 * Leases live in Postgres (`partition_leases`): a lease has an owner, an expiry renewed every
 * HEARTBEAT, and a fencing epoch bumped on every takeover; the actor's transaction share-locks the
 * lease row and checks owner and epoch, so a worker that lost its lease cannot commit. Workers
 * register in `workers`; each takes ceil(P / live workers) partitions, releasing extras when others
 * join. A dead worker's leases expire after LEASE_TTL and are taken at the next heartbeat (< 10 s).
 * A worker stopping (SIGTERM) hands over at once: no more deliveries, batches in flight commit (up to
 * FINISH_WITHIN), watermarks are saved, leases expired, and the others, notified, take them.
 *
 * On every acquisition the partition's consumer is recreated to start right after the partition's
 * stored watermark, so no message is skipped whatever the previous owner had delivered; messages a
 * lane already applied are skipped by its stored offset.
 *
 * Upgrading from per-project subjects (before lanes): each partition also has a legacy consumer for
 * `<prefix>.in.<p>.>`, whose messages are applied per project, as before. Lane consumers start only
 * once every partition's legacy messages are applied (stream_upgrade.drained_at), so no contact's lane
 * message overtakes one of its older messages; legacy consumers keep running for LEGACY_GRACE after
 * that, for api processes of the previous release still being replaced.
 */
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream"
import { createInbox, nanos } from "@nats-io/transport-node"
import { Duration, Effect, Fiber, Layer, Queue, Schedule, Schema, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { InMessage } from "../stream/messages.ts"
import { Nats } from "../stream/Nats.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import { lanesWithBackfillsLeft } from "./backfillsLeft.ts"
import { PartitionRun } from "./ProjectActors.ts"
import { type IngestItem, splitEnvelopes } from "./IngestSplitter.ts"
import { WebhookRunner } from "../workflows/webhooks.ts"
import { repartitionForLanes } from "./upgrade.ts"
import { makeWakeup } from "../lib/dueLoop.ts"
import { LaneActors } from "./LaneActors.ts"
import { MailSender } from "./MailSender.ts"
import { type Consumption, type Owned, OwnedPartitions } from "./OwnedPartitions.ts"
import { ScheduleWakeups } from "./ScheduleWakeups.ts"
import { LEASES_CHANNEL, listenTo } from "../lib/notifications.ts"

const HEARTBEAT = Duration.seconds(2)
const LEASE_TTL_SECONDS = 6
const WORKER_DEAD_SECONDS = 6
/** How long after the drain legacy subjects are still consumed (old api processes being replaced). */
const LEGACY_GRACE_SECONDS = 3600
/** How often each leased partition's lag is read from NATS for /metrics (a request per partition). */
const LAG_REPORT = Duration.seconds(15)
/** Ingest envelopes split together at most (each up to 256 KiB). */
const SPLIT_BATCH = 200
/** On a graceful hand-over, how long batches in flight get to commit before they are rolled back. */
const FINISH_WITHIN = Duration.seconds(5)

type Feed = "lanes" | "legacy" | "ingest"

/**
 * Partition consumers are push consumers: the server sends each message as it is stored, with flow
 * control (it waits for our answer to its flow-control request, which we give as we take messages,
 * so what is buffered here stays bounded) and a heartbeat every PUSH_HEARTBEAT_MS when idle.
 *
 * Why not pull: nats-server before 2.9.15 (Debian's is 2.9.10) drops a pull request that expired,
 * without the 408 that tells the client so, when a message arrives between the request's expiry and
 * the server's sweep of expired requests (fixed upstream by nats-server#3942). The client then believes
 * its pull is still open and waits for two missed heartbeats: one lane's messages were held for 5 s
 * (27 s with the client's defaults) now and then under load, the tail of the segments bench (M5).
 * A push consumer has no requests to lose. The heartbeat only reports a consumer that went quiet and
 * frees a flow-control stall, so it can be rare: an idle worker pays for each one.
 */
const PUSH_HEARTBEAT_MS = 5_000

/** Consumer notifications of normal operation; the rest are logged. */
const QUIET_NOTIFICATIONS = new Set(["heartbeat", "flow_control"])
const isRoutine = (notification: { readonly type: string }) => QUIET_NOTIFICATIONS.has(notification.type)

const decodeMessage = Schema.decodeUnknownExit(InMessage)

export const WorkerLive = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const nats = yield* Nats
  const outbox = yield* Outbox
  const relay = yield* OutboxRelay
  const partitions = yield* OwnedPartitions
  const { workerId, owned } = partitions
  const sender = yield* MailSender
  const wakeups = yield* ScheduleWakeups
  /** Wakes the heartbeat: another worker released partitions or joined. */
  const leasesChanged = yield* makeWakeup
  const actors = yield* LaneActors
  const webhooks = yield* WebhookRunner
  const consumerName = (partition: number, feed: Feed) =>
    feed === "lanes"
      ? `${nats.prefix}_part_${partition}`
      : feed === "ingest"
      ? `${nats.prefix}_ingest_${partition}`
      : `${nats.prefix}_legacy_${partition}`
  const filterOf = (partition: number, feed: Feed) =>
    feed === "lanes"
      ? nats.names.laneFilter(partition)
      : feed === "ingest"
      ? nats.names.ingestFilter(partition)
      : nats.names.legacyFilter(partition)
  /** Held by a heartbeat's rebalance and by the shutdown hand-over, so they never overlap. */
  const leaseLock = yield* Semaphore.make(1)
  /** Whether lane messages may be applied (every pre-lane message is), and whether legacy subjects are still read. */
  const upgrade = { drained: false, readLegacy: true }

  yield* sql`INSERT INTO partition_leases (partition)
             SELECT generate_series(0, ${nats.partitions - 1}) ON CONFLICT DO NOTHING`
  yield* sql`INSERT INTO partition_state (partition)
             SELECT generate_series(0, ${nats.partitions - 1}) ON CONFLICT DO NOTHING`

  /** A stream message that does not decode would block its lane forever: set aside as a dead letter, acked. */
  const setAsideUndecodable = (message: JsMsg, run: PartitionRun, error: string) =>
    Effect.gen(function*() {
      let projectId: unknown
      try {
        projectId = (message.json() as { projectId?: unknown })?.projectId
      } catch {
        projectId = undefined
      }
      if (typeof projectId === "string" && /^[0-9a-f-]{36}$/i.test(projectId)) {
        yield* sql`INSERT INTO dead_letters (id, project_id, partition, seq, source, subject, payload, error)
                   VALUES (${uuidv7()}, ${projectId}, ${run.partition}, ${message.seq}, 'stream', ${message.subject},
                           ${message.string().slice(0, 1_000_000)}, ${`undecodable stream message: ${error}`.slice(0, 4000)})`.pipe(
          Effect.tap(() => Effect.sync(() => WorkerMetrics.deadLettered.inc())),
          Effect.ignore
        )
      }
      yield* Effect.logError("stream message does not decode; set aside", { seq: message.seq, subject: message.subject, error })
      message.ack()
      run.applied(message.seq)
    })

  /** Lane messages are cut well under NATS' max payload (1 MiB by default), whatever it is configured to. */
  const maxLaneMessageBytes = () => Math.min(256 * 1024, (nats.connection.info?.max_payload ?? 1024 * 1024) / 2)

  /**
   * The splitter of one ingest consumer: every envelope waiting is split at once into lane messages
   * (IngestSplitter.ts); the envelopes are acked, and the watermark moves, once all are stored. A failed
   * publish fails the consumer, which is recreated at the watermark and splits the rest again.
   */
  const runSplitter = (run: PartitionRun, queue: Queue.Queue<IngestItem & { readonly message: JsMsg }>) =>
    Effect.forever(Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, SPLIT_BATCH)
      // Lanes in parallel; a lane's messages (track messages past 256 KiB, commands between them) one after the other, in order.
      const byLane = Map.groupBy(splitEnvelopes(nats.prefix, outbox.lanes, batch, maxLaneMessageBytes()), (message) => message.lane)
      yield* Effect.forEach(byLane.values(), (messages) =>
        Effect.forEach(messages, (lane) =>
          Effect.tryPromise(() => nats.js.publish(lane.subject, lane.json, { msgID: lane.msgID, timeout: 5_000 })), {
          discard: true
        }), { concurrency: "unbounded", discard: true })
      for (const envelope of batch) {
        envelope.message.ack()
        run.applied(envelope.seq)
      }
    }))

  /** Recreates one of the partition's durable consumers at its watermark and feeds its messages to actors. */
  const consume = (run: PartitionRun, feed: Feed) =>
    Effect.gen(function*() {
      const stream = nats.names.inStream
      const name = consumerName(run.partition, feed)
      yield* Effect.tryPromise(async () => {
        await nats.jsm.consumers.delete(stream, name).catch(() => undefined)
        await nats.jsm.consumers.add(stream, {
          durable_name: name,
          filter_subject: filterOf(run.partition, feed),
          ack_policy: AckPolicy.Explicit,
          ack_wait: 60 * 1_000_000_000,
          max_ack_pending: 20_000,
          deliver_subject: createInbox(),
          flow_control: true,
          idle_heartbeat: nanos(PUSH_HEARTBEAT_MS),
          ...(run.watermark > 0
            ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: run.watermark + 1 }
            : { deliver_policy: DeliverPolicy.All })
        })
      })
      const messages = yield* Effect.acquireRelease(
        Effect.tryPromise(async () => (await nats.js.consumers.getPushConsumer(stream, name)).consume()),
        (iterator) =>
          Effect.promise(() => iterator.close().catch(() => undefined)).pipe(Effect.timeout("1 second"), Effect.ignore)
      )
      // A consumer that goes quiet (missed heartbeats) or is deleted under us is otherwise silent: say so.
      yield* Stream.fromAsyncIterable(messages.status(), (error) => error).pipe(
        Stream.runForEach((notification) =>
          isRoutine(notification)
            ? Effect.void
            : Effect.logWarning("partition consumer notification", { partition: run.partition, feed, ...notification })
        ),
        Effect.ignore,
        Effect.forkScoped
      )
      // Envelopes split by an earlier attempt of this consumer are gone with it: delivered again from the watermark.
      if (feed === "ingest") run.forgetInflight()
      const splitQueue = feed === "ingest"
        ? yield* Queue.bounded<IngestItem & { readonly message: JsMsg }>(SPLIT_BATCH * 2)
        : undefined
      const split = splitQueue && ((item: IngestItem & { readonly message: JsMsg }) => Queue.offer(splitQueue, item))
      const consumeMessages = Stream.fromAsyncIterable(messages, (error) => error).pipe(
        Stream.runForEach((message: JsMsg) => {
          const seq = message.seq
          if (seq <= run.watermark) {
            message.ack()
            return Effect.void
          }
          run.delivered(seq)
          // `<prefix>.lane.<partition>.<projectId>.<lane>.<kind>`; legacy subjects have no lane.
          const lane = feed === "lanes" ? Number(message.subject.split(".")[4]) : undefined
          let decoded: ReturnType<typeof decodeMessage>
          try {
            decoded = decodeMessage(message.json())
          } catch (error) {
            return setAsideUndecodable(message, run, String(error))
          }
          if (decoded._tag === "Failure") return setAsideUndecodable(message, run, String(decoded.cause))
          if (split) {
            const body = decoded.value
            if (body.kind === "track") return Effect.asVoid(split({ seq, message, projectId: body.projectId, events: body.events }))
            if (body.kind === "command" && body.type === "deleteEvents") {
              return Effect.asVoid(split({ seq, message, projectId: body.projectId, command: body }))
            }
            return setAsideUndecodable(message, run, `an ingest subject carries only tracked events and event deletes, not ${body.kind}`)
          }
          if (lane !== undefined && !(Number.isInteger(lane) && lane >= 0 && lane < outbox.lanes.count)) {
            return setAsideUndecodable(message, run, `lane ${lane} is not one of this deployment's ${outbox.lanes.count} lanes`)
          }
          return actors.deliver({ delivered: { seq, partition: run.partition, lane, body: decoded.value }, message, run })
        })
      )
      yield* splitQueue ? Effect.raceFirst(consumeMessages, runSplitter(run, splitQueue)) : consumeMessages
    }).pipe(Effect.scoped)

  const startFeed = (partition: number, epoch: number, watermark: number, feed: Feed) =>
    Effect.gen(function*() {
      const run = new PartitionRun(partition, epoch, watermark)
      // A consumer that fails (NATS restarting, consumer deleted by a new owner) is retried while leased.
      const fiber = yield* consume(run, feed).pipe(
        Effect.tapCause((cause) => Effect.logWarning("partition consumer stopped; restarting", { partition, feed }, cause)),
        Effect.retry(Schedule.spaced(Duration.seconds(1))),
        Effect.ignore,
        Effect.forkDetach
      )
      return { run, fiber } satisfies Consumption
    })

  /** Starts the actors of the partition's lanes that have backfills left (see backfillsLeft.ts). */
  const resumeBackfills = (partition: number, lanesFeed: Consumption) =>
    lanesWithBackfillsLeft(outbox.lanes, partition).pipe(
      Effect.flatMap((left) =>
        Effect.forEach(left, (row) => actors.resumeBackfills(row.project_id, row.lane, lanesFeed.run), { discard: true })
      ),
      // Not fatal to the partition: the lanes' next messages load their backfills anyway.
      Effect.catchCause((cause) => Effect.logWarning("could not resume the partition's backfills", { partition }, cause))
    )

  const start = (partition: number, epoch: number, marks: { lanes: number; ingest: number; legacy: number }, legacyDrained: boolean) =>
    Effect.gen(function*() {
      const entry: Owned = { epoch, lanes: undefined, ingest: undefined, legacy: undefined, legacyDrained }
      partitions.add(partition, entry)
      WorkerMetrics.partitionsAcquired.inc()
      if (upgrade.readLegacy) entry.legacy = yield* startFeed(partition, epoch, marks.legacy, "legacy")
      if (upgrade.drained) {
        entry.lanes = yield* startFeed(partition, epoch, marks.lanes, "lanes")
        entry.ingest = yield* startFeed(partition, epoch, marks.ingest, "ingest")
        yield* resumeBackfills(partition, entry.lanes)
      }
      yield* sender.recoverPartition(partition)
      yield* sender.sweep([partition])
      yield* webhooks.recoverPartition(partition)
      yield* Effect.logInfo("partition acquired", { partition, epoch, ...marks })
    })

  /**
   * Stops the consumers of partitions no longer leased here (all at once: closing one may take a
   * second), then their actors: with `finishWithin` a batch in flight commits first, else it rolls back.
   */
  const stopFeeds = (entries: ReadonlyArray<Owned>, finishWithin?: Duration.Input) =>
    Effect.gen(function*() {
      const feeds = entries.flatMap((entry) => [entry.lanes, entry.ingest, entry.legacy].filter((feed) => feed !== undefined))
      for (const feed of feeds) feed.run.stopped = true
      yield* Effect.forEach(feeds, (feed) => Fiber.interrupt(feed.fiber), { concurrency: "unbounded", discard: true })
      yield* Effect.forEach(feeds, (feed) => actors.stopPartition(feed.run, finishWithin), { concurrency: "unbounded", discard: true })
    })

  /** A lease lost (taken by another worker): its batches can no longer commit, so they stop at once. */
  const stop = (partition: number) =>
    Effect.gen(function*() {
      const entry = owned.get(partition)
      if (!entry) return
      partitions.remove(partition)
      yield* stopFeeds([entry])
      WorkerMetrics.partitionLag.remove({ partition })
    })

  type Watermarks = { partition: number; epoch: number; lanes: number; ingest: number; legacy: number }
  /** The watermarks last saved by a heartbeat, per partition: unchanged ones are not written again. */
  const savedWatermarks = new Map<number, string>()

  /** The watermarks to persist for a partition leased here (fenced by the epoch when written). */
  const watermarksOf = (partition: number, entry: Owned): Watermarks => ({
    partition,
    epoch: entry.epoch,
    lanes: entry.lanes?.run.watermark ?? 0,
    ingest: entry.ingest?.run.watermark ?? 0,
    legacy: entry.legacy?.run.watermark ?? 0
  })

  const saveWatermarks = (marks: ReadonlyArray<Watermarks>) =>
    marks.length === 0 ? Effect.void : sql`
      UPDATE partition_state s SET lane_seq = GREATEST(s.lane_seq, x.lanes), ingest_seq = GREATEST(s.ingest_seq, x.ingest),
                                   applied_seq = GREATEST(s.applied_seq, x.legacy)
      FROM jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) AS x(partition int, epoch bigint, lanes bigint, ingest bigint, legacy bigint),
           partition_leases l
      WHERE s.partition = x.partition AND l.partition = x.partition AND l.owner = ${workerId} AND l.epoch = x.epoch`.pipe(Effect.asVoid)

  /** Hands partitions over: batches in flight commit, then the watermarks are saved and the leases expired. */
  const release = (released: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      const releasing = released.flatMap((partition) => {
        const entry = owned.get(partition)
        return entry ? [{ partition, entry }] : []
      })
      if (releasing.length === 0) return
      for (const { partition } of releasing) partitions.remove(partition)
      yield* stopFeeds(releasing.map(({ entry }) => entry), FINISH_WITHIN)
      yield* saveWatermarks(releasing.map(({ partition, entry }) => watermarksOf(partition, entry)))
      // Expire the lease (the next owner bumps the epoch) without touching the lease row itself: an
      // update of that row would queue behind batch transactions still share-locking it.
      yield* sql`
        UPDATE partition_state s SET expires_at = '-infinity'
        FROM partition_leases l
        WHERE s.partition IN ${sql.in(released)} AND l.partition = s.partition AND l.owner = ${workerId}`
      for (const { partition } of releasing) WorkerMetrics.partitionLag.remove({ partition })
      yield* Effect.logInfo("partitions released", { partitions: releasing.map(({ partition }) => partition) })
    })

  /** Reads the upgrade state; records partitions whose legacy messages are all applied; completes the drain. */
  const followUpgrade = Effect.gen(function*() {
    // Drained and past the grace period is final: nothing left to follow.
    if (upgrade.drained && !upgrade.readLegacy) return
    const [state] = yield* sql<{ drained_at: Date | null; grace: boolean }>`
      SELECT drained_at, (drained_at IS NULL OR drained_at > now() - make_interval(secs => ${LEGACY_GRACE_SECONDS})) AS grace
      FROM stream_upgrade WHERE id = 1`
    upgrade.drained = state?.drained_at != null
    upgrade.readLegacy = state?.grace ?? false
    if (upgrade.drained) return
    for (const [partition, entry] of owned) {
      if (entry.legacyDrained || !entry.legacy) continue
      const info = yield* Effect.tryPromise(() => nats.jsm.consumers.info(nats.names.inStream, consumerName(partition, "legacy"))).pipe(
        Effect.option
      )
      if (info._tag === "Some" && info.value.num_pending === 0 && info.value.num_ack_pending === 0 && entry.legacy.run.caughtUp()) {
        yield* sql`UPDATE partition_state SET legacy_drained = true WHERE partition = ${partition}`
        entry.legacyDrained = true
      }
    }
    // The worker that sees every partition drained completes the upgrade (once, under the row lock).
    yield* sql.withTransaction(Effect.gen(function*() {
      const [row] = yield* sql<{ drained_at: Date | null }>`SELECT drained_at FROM stream_upgrade WHERE id = 1 FOR UPDATE`
      if (!row || row.drained_at !== null) return
      const [pending] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM partition_state WHERE partition < ${nats.partitions} AND NOT legacy_drained`
      if ((pending?.n ?? 1) > 0) return
      yield* repartitionForLanes(outbox.lanes)
      yield* sql`UPDATE stream_upgrade SET drained_at = now() WHERE id = 1`
      upgrade.drained = true
      yield* Effect.logInfo("stream upgraded to lanes: every message published before lanes is applied")
    }))
  })

  const rebalance = Effect.gen(function*() {
    // One statement: this worker's heartbeat, long-dead workers forgotten, and the live ones counted
    // (the count does not see the CTEs' writes: the others, plus this one).
    const [live] = yield* sql<{ n: number }>`
      WITH beat AS (
        INSERT INTO workers (id, heartbeat_at) VALUES (${workerId}, now())
        ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
      ), forgotten AS (
        DELETE FROM workers WHERE heartbeat_at < now() - make_interval(secs => ${WORKER_DEAD_SECONDS * 3}) AND id <> ${workerId}
      )
      SELECT count(*)::int + 1 AS n FROM workers
      WHERE heartbeat_at > now() - make_interval(secs => ${WORKER_DEAD_SECONDS}) AND id <> ${workerId}`
    const share = Math.ceil(nats.partitions / Math.max(1, live?.n ?? 1))

    // Persist each partition's watermarks that moved (where a new owner starts reading), fenced by the epoch.
    const moved = [...owned].map(([partition, entry]) => watermarksOf(partition, entry))
      .filter((marks) => savedWatermarks.get(marks.partition) !== JSON.stringify(marks))
    yield* saveWatermarks(moved)
    for (const marks of moved) savedWatermarks.set(marks.partition, JSON.stringify(marks))
    // Only leases still alive are renewed: a released or expired one is up for grabs.
    const renewed = yield* sql<{ partition: number; epoch: string }>`
      UPDATE partition_state s SET expires_at = now() + make_interval(secs => ${LEASE_TTL_SECONDS})
      FROM partition_leases l
      WHERE l.partition = s.partition AND l.owner = ${workerId} AND s.expires_at > now()
      RETURNING s.partition, l.epoch`
    const held = new Map(renewed.map((row) => [row.partition, Number(row.epoch)]))
    // Lost: leased here but taken by someone else (we were too slow to renew).
    for (const [partition, entry] of owned) {
      if (held.get(partition) !== entry.epoch) yield* stop(partition)
    }
    yield* followUpgrade
    // Drained since these partitions were taken: their lane consumers and splitters start now.
    for (const [partition, entry] of owned) {
      if (upgrade.drained && !entry.lanes) {
        const [state] = yield* sql<{ lane_seq: string; ingest_seq: string }>`
          SELECT lane_seq, ingest_seq FROM partition_state WHERE partition = ${partition}`
        entry.lanes = yield* startFeed(partition, entry.epoch, Number(state?.lane_seq ?? 0), "lanes")
        entry.ingest = yield* startFeed(partition, entry.epoch, Number(state?.ingest_seq ?? 0), "ingest")
        yield* resumeBackfills(partition, entry.lanes)
      }
    }
    if (held.size > share) {
      yield* release([...held.keys()].sort((a, b) => b - a).slice(0, held.size - share))
      yield* sql`SELECT pg_notify(${LEASES_CHANNEL}, ${workerId})`
    } else if (held.size < share) {
      // A partition still share-locked by its old owner's in-flight batch is skipped until that commits.
      const acquired = yield* sql<
        { partition: number; epoch: string; lane_seq: string; ingest_seq: string; applied_seq: string; legacy_drained: boolean }
      >`
        WITH free AS (
          SELECT l.partition FROM partition_leases l JOIN partition_state s ON s.partition = l.partition
          WHERE (l.owner IS NULL OR s.expires_at < now()) AND l.partition < ${nats.partitions}
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
          RETURNING s.partition, s.lane_seq, s.ingest_seq, s.applied_seq, s.legacy_drained
        )
        SELECT taken.partition, taken.epoch, renewed.lane_seq, renewed.ingest_seq, renewed.applied_seq, renewed.legacy_drained
        FROM taken JOIN renewed ON renewed.partition = taken.partition`
      for (const row of acquired) {
        yield* start(
          row.partition,
          Number(row.epoch),
          { lanes: Number(row.lane_seq), ingest: Number(row.ingest_seq), legacy: Number(row.applied_seq) },
          row.legacy_drained
        )
      }
      if (acquired.length > 0) {
        yield* wakeups.all
        // The lag of partitions just taken shows at once, not at the next LAG_REPORT.
        yield* Effect.forkScoped(Effect.suspend(() => reportLag))
      }
    }
    WorkerMetrics.partitionsOwned.set(owned.size)
  })

  const background: Array<Fiber.Fiber<unknown, unknown>> = []

  /** Messages waiting per partition: its lane messages and its envelopes not yet split. */
  const reportLag = Effect.suspend(() => Effect.forEach([...owned.keys()], (partition) =>
    Effect.forEach(["lanes", "ingest"] as const, (feed) =>
      Effect.tryPromise(() => nats.jsm.consumers.info(nats.names.inStream, consumerName(partition, feed))).pipe(
        Effect.map((info) => info.num_pending + info.num_ack_pending),
        Effect.orElseSucceed(() => 0)
      )).pipe(
        Effect.tap((waiting) => Effect.sync(() => WorkerMetrics.partitionLag.set(waiting[0]! + waiting[1]!, { partition })))
      ), { discard: true, concurrency: 8 }))
  background.push(yield* reportLag.pipe(Effect.repeat(Schedule.spaced(LAG_REPORT)), Effect.forkScoped))

  // Lease heartbeats, and a rebalance at once when another worker released partitions or joined.
  const heartbeat = Effect.gen(function*() {
    while (true) {
      yield* leaseLock.withPermits(1)(rebalance).pipe(
        Effect.tapCause((cause) => Effect.logWarning("lease heartbeat failed", cause)),
        Effect.ignore
      )
      yield* leasesChanged.wait(Duration.toMillis(HEARTBEAT))
    }
  })
  background.push(yield* Effect.forkScoped(heartbeat))
  yield* listenTo(LEASES_CHANNEL, (from) => (from === workerId ? Effect.void : leasesChanged.signal))

  // On shutdown hand the partitions over at once rather than after the lease expires. No heartbeat
  // may run meanwhile (it would take the released partitions back): the lease lock waits out one in
  // progress, then the background fibers stop before anything is released. The scheduled work, composed
  // above this layer in app.ts, has stopped already.
  yield* Effect.addFinalizer(() =>
    leaseLock.withPermits(1)(Effect.gen(function*() {
      yield* Fiber.interruptAll(background)
      yield* release([...owned.keys()])
      yield* actors.stopAll
      yield* sql`DELETE FROM workers WHERE id = ${workerId}`
      yield* sql`SELECT pg_notify(${LEASES_CHANNEL}, ${workerId})`
      yield* Effect.logInfo("worker handed its partitions over")
    })).pipe(Effect.ignore)
  )
  // Others rebalance now rather than at their next heartbeat.
  yield* sql`SELECT pg_notify(${LEASES_CHANNEL}, ${workerId})`
  yield* Effect.logInfo("worker started", { workerId })
}))
