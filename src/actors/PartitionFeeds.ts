/**
 * The consumers of a leased partition's feeds on stream IN: its lane messages (handed to lane actors),
 * its ingest envelopes (split into lane messages, IngestSplitter.ts) and its legacy per-project
 * messages (from before lanes, handed to the projects' actors). Each is a durable consumer recreated
 * at the partition's stored watermark whenever the partition is taken, so no message is skipped
 * whatever the previous owner had delivered; messages a lane already applied are skipped by its offset.
 *
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
 *
 * In a NATS cluster (NATS_REPLICAS=3) a node may die under a consumer, so an attempt is trusted only
 * while the consumer provably delivers everything, and is otherwise ended and made again at the
 * watermark (everything at or below it applied; messages above it delivered again, skipped by position
 * where a lane applied them already):
 * - Made afresh: the old consumer is deleted first, and a delete that fails (timed out: the JetStream
 *   meta leader was just killed) fails the attempt rather than being ignored, and the new consumer must
 *   report nothing delivered. A stale one keeps its state (an add over it is an in-place update: on
 *   2.9.10 it still counted the 8 messages delivered to the old inbox, unacked), so what the failed
 *   attempt had been delivered is the server's to redeliver when it sees fit, not this attempt's.
 * - Alive: a consumer made while a node was being killed can stay silent for good (seen on 2.9.10: no
 *   message and no heartbeat for the rest of the run, every event of the partition's lanes held back
 *   while the worker kept its lease). Two missed heartbeats, or "consumer deleted", end the attempt.
 * - Contiguous: the consumer numbers its deliveries (1 for a fresh one, +1 each, redeliveries
 *   included). The watermark moves over the sequences delivered and applied, in delivery order, so a
 *   delivery lost with a node would be passed over and its redelivery (after ack_wait) dropped as below
 *   the watermark: a jump in that number ends the attempt before the watermark can pass the hole.
 */
import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type JsMsg } from "@nats-io/jetstream"
import { createInbox, nanos } from "@nats-io/transport-node"
import { Context, Data, Duration, Effect, Layer, Queue, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { insertUndecodableSql } from "../store/engine/deadLetters.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { InMessage } from "../stream/messages.ts"
import { Nats } from "../stream/Nats.ts"
import { Outbox } from "../stream/Outbox.ts"
import { type IngestItem, splitEnvelopes } from "./IngestSplitter.ts"
import { LaneActors } from "./LaneActors.ts"
import type { Consumption } from "./OwnedPartitions.ts"
import { PartitionRun } from "./partitionRun.ts"

export type Feed = "lanes" | "legacy" | "ingest"

const PUSH_HEARTBEAT_MS = 5_000
/** Ingest envelopes split together at most (each up to 256 KiB). */
const SPLIT_BATCH = 200

/** Consumer notifications of normal operation; the rest are logged. */
const QUIET_NOTIFICATIONS = new Set(["heartbeat", "flow_control"])
const isRoutine = (notification: { readonly type: string }) => QUIET_NOTIFICATIONS.has(notification.type)

const decodeMessage = Schema.decodeUnknownExit(InMessage)

type Envelope = IngestItem & { readonly message: JsMsg }

/** The consumer skipped deliveries (or its state outlived the delete): it is recreated at the watermark. */
class DeliveryGap extends Data.TaggedError("DeliveryGap")<{ readonly expected: number; readonly got: number; readonly seq: number }> {
  override get message() {
    return `delivery ${this.got} (stream sequence ${this.seq}) where ${this.expected} was due`
  }
}

/** The consumer stopped delivering: heartbeats missed (its leader lost, or it was lost with a node), or deleted. */
class ConsumerLost extends Data.TaggedError("ConsumerLost")<{ readonly notification: string }> {
  override get message() {
    return this.notification
  }
}

const isConsumerNotFound = (error: unknown) => error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound

export class PartitionFeeds extends Context.Service<PartitionFeeds, {
  /** Consumes one feed of a partition leased at `epoch`, from right after `watermark`; retried while leased. */
  readonly start: (partition: number, epoch: number, watermark: number, feed: Feed) => Effect.Effect<Consumption>
  /** The durable consumer's name of a partition's feed. */
  readonly consumerName: (partition: number, feed: Feed) => string
}>()("app/actors/PartitionFeeds") {
  static readonly layer = Layer.effect(
    PartitionFeeds,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats
      const outbox = yield* Outbox
      const actors = yield* LaneActors

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
            yield* insertUndecodableSql(sql, {
              projectId,
              partition: run.partition,
              seq: message.seq,
              subject: message.subject,
              text: message.string(),
              error: `undecodable stream message: ${error}`
            }).pipe(
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
      const runSplitter = (run: PartitionRun, queue: Queue.Queue<Envelope>) =>
        Effect.forever(Effect.gen(function*() {
          const batch = yield* Queue.takeBetween(queue, 1, SPLIT_BATCH)
          // Lanes in parallel; a lane's messages (track messages past 256 KiB, commands between them) one after the other, in order.
          const byLane = Map.groupBy(splitEnvelopes(nats.prefix, outbox.lanes, batch, maxLaneMessageBytes()), (message) => message.lane)
          yield* Effect.forEach(byLane.values(), (messages) =>
            Effect.forEach(messages, (lane) =>
              Effect.tryPromise(() =>
                nats.js.publish(lane.subject, lane.json, { msgID: lane.msgID, timeout: 5_000 })
              ), {
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
            // Gone for sure before it is made again (a failed delete fails this attempt, retried in a second).
            await nats.jsm.consumers.delete(stream, name).catch((error) => {
              if (!isConsumerNotFound(error)) throw error
            })
            const created = await nats.jsm.consumers.add(stream, {
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
            if (created.delivered.consumer_seq !== 0 || created.num_ack_pending !== 0) {
              throw new Error(`consumer ${name} was not made afresh (${created.delivered.consumer_seq} delivered already)`)
            }
          })
          const messages = yield* Effect.acquireRelease(
            Effect.tryPromise(async () => (await nats.js.consumers.getPushConsumer(stream, name)).consume()),
            (iterator) => Effect.promise(() => iterator.close().catch(() => undefined)).pipe(Effect.timeout("1 second"), Effect.ignore)
          )
          // A consumer that went quiet (two heartbeats missed) or was deleted under us delivers nothing more,
          // and says nothing else: this attempt ends, and the consumer is made again at the watermark.
          const watchStatus = Stream.fromAsyncIterable(messages.status(), (error): unknown => error).pipe(
            Stream.runForEach((notification) =>
              isRoutine(notification)
                ? Effect.void
                : notification.type === "heartbeats_missed" || notification.type === "consumer_deleted"
                ? Effect.fail(new ConsumerLost({ notification: notification.type }))
                : Effect.logWarning("partition consumer notification", { partition: run.partition, feed, ...notification })
            ),
            Effect.andThen(Effect.never)
          )
          // Envelopes split by an earlier attempt of this consumer are gone with it: delivered again from the watermark.
          if (feed === "ingest") run.forgetInflight()
          const splitQueue = feed === "ingest" ? yield* Queue.bounded<Envelope>(SPLIT_BATCH * 2) : undefined
          const split = splitQueue && ((item: Envelope) => Queue.offer(splitQueue, item))
          let lastDelivery = 0
          const consumeMessages = Stream.fromAsyncIterable(messages, (error): unknown => error).pipe(
            Stream.runForEach((message: JsMsg) => {
              const seq = message.seq
              const delivery = message.info.deliverySequence
              if (delivery !== lastDelivery + 1) {
                WorkerMetrics.deliveryGaps.inc()
                return Effect.fail(new DeliveryGap({ expected: lastDelivery + 1, got: delivery, seq }))
              }
              lastDelivery = delivery
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
                return setAsideUndecodable(
                  message,
                  run,
                  `an ingest subject carries only tracked events and event deletes, not ${body.kind}`
                )
              }
              if (lane !== undefined && !(Number.isInteger(lane) && lane >= 0 && lane < outbox.lanes.count)) {
                return setAsideUndecodable(message, run, `lane ${lane} is not one of this deployment's ${outbox.lanes.count} lanes`)
              }
              return actors.deliver({ delivered: { seq, partition: run.partition, lane, body: decoded.value }, message, run })
            })
          )
          // Messages the server pushed while the connection was down are lost in transit, and it would deliver
          // them again only after ack_wait (60 s), behind later ones: after a reconnect the consumer is
          // recreated at the watermark instead, so they come again at once and in order.
          const reconnected = Stream.fromAsyncIterable(nats.connection.status(), (error) => error).pipe(
            Stream.filter((status) => status.type === "reconnect"),
            Stream.take(1),
            Stream.runDrain,
            Effect.ignore,
            Effect.andThen(Effect.fail(new Error("NATS reconnected: the consumer starts again at its watermark")))
          )
          yield* Effect.raceFirst(
            splitQueue ? Effect.raceFirst(consumeMessages, runSplitter(run, splitQueue)) : consumeMessages,
            Effect.raceFirst(watchStatus, reconnected)
          )
        }).pipe(Effect.scoped)

      const start = Effect.fn("PartitionFeeds.start")(function*(partition: number, epoch: number, watermark: number, feed: Feed) {
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

      return PartitionFeeds.of({ start, consumerName })
    })
  )
}
