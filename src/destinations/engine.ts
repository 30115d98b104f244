/**
 * The delivery engine of event destinations (worker role).
 *
 * - **Recording.** One durable JetStream consumer on stream OUT (`<prefix>_destinations`, shared by the
 *   workers) takes the events the service emits. Each batch of messages is matched against its
 *   projects' enabled destinations (read once per batch, so a destination gets the events emitted after
 *   it was created, however late the `destinations` invalidation topic announces the change) and recorded in one statement: a row per
 *   (destination, event), its id the delivery's `webhook-id`, derived from both ids, so a redelivered
 *   message records nothing twice. The messages are acked after the commit (at least once).
 * - **Sending.** Each destination has its own pump (pump.ts): it claims the destination's due deliveries
 *   (each the earliest open one of its contact, so a contact's events arrive in order: a later one waits
 *   while an earlier one is pending or retrying), up to DESTINATION_CONCURRENCY attempts in flight and
 *   more claimed ahead (as far as the endpoint's speed allows within a lease), and performs them
 *   (attempt.ts) with DESTINATION_TIMEOUT_MS each. A slow or dead endpoint fills only its own slots:
 *   other destinations, of this project or another, are pumped independently. A freshly recorded
 *   delivery is recorded already claimed for this worker's pump when it has room, and attempted as soon
 *   as the recording commits, with no claim or poll in between; the others wake the pump. A contact's
 *   next delivery is pumped once the one before it is settled (the store decides it under the
 *   (destination, contact) pair's lock, so several workers keep the order too). A slot is free again
 *   when the endpoint answered; the outcomes are recorded in batches (settleMany).
 * - **Retries.** A failed attempt is due again after an exponential backoff, until its retry period
 *   (DESTINATION_RETRY_HOURS) ends, then parked. A due loop (lib/dueLoop.ts) sleeps until the next due
 *   time (a failed attempt wakes it to look again) and wakes the destinations with due deliveries; replays and re-enabling wake it through the
 *   invalidation topic. A claim is a lease (`claimed_until`): a worker that dies mid-attempt leaves the
 *   delivery claimable again afterwards, so it is sent again with the same `webhook-id`.
 * - **Auto-disable.** DESTINATION_DISABLE_AFTER_FAILURES failed attempts in a row disable the
 *   destination (`disabledReason: "failures"`, shown on the dashboard); its open deliveries wait until
 *   it is enabled again, and events are not recorded for it meanwhile.
 */
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream"
import type { SqlError } from "effect/sql"
import { Context, Duration, Effect, Fiber, FiberSet, Layer, Queue, Schedule } from "effect"
import { AppConfig } from "../config.ts"
import { matchesAny } from "../domain/destinations.ts"
import { Dns, hostResolver } from "../lib/dns.ts"
import { makeWakeup, runWhenDue } from "../lib/dueLoop.ts"
import { cidrMatcher } from "../domain/addresses.ts"
import { type ClaimedDelivery, Destinations, type NewDelivery } from "../store/Destinations.ts"
import { pgPool } from "../store/db.ts"
import { Invalidations } from "../stream/Invalidations.ts"
import type { OutEvent, TrackMessage } from "../stream/messages.ts"
import { Nats } from "../stream/Nats.ts"
import { attemptDelivery, type AttemptOptions } from "./attempt.ts"
import { makePumps, type Settled } from "./pump.ts"

/** The invalidation topic: a project's destinations changed, and perhaps one has deliveries due now (`wake`). */
export const DESTINATIONS_TOPIC = "destinations"
export interface DestinationsChanged {
  readonly projectId: string
  readonly wake?: string
}

/** What a destination receives: the event, as JSON. */
export const deliveryBody = (event: OutEvent): string =>
  JSON.stringify({
    type: event.name,
    timestamp: event.at,
    data: { id: event.id, projectId: event.projectId, contactId: event.contactId, email: event.email, data: event.data }
  })

interface Received {
  readonly source: "out" | "track"
  readonly message: JsMsg
}

const parse = <A>(message: JsMsg): A | undefined => {
  try {
    return message.json<A>()
  } catch {
    return undefined
  }
}

const CONSUMER_BATCH = 1000
const PRUNE_BATCH = 5000

export const retryUntilFrom = (hours: number) => new Date(Date.now() + hours * 3_600_000)

/** The attempt options from the configuration (the api's test events use them too). */
export const attemptOptions = Effect.gen(function*() {
  const config = yield* AppConfig
  const dns = yield* Dns
  return {
    resolve: hostResolver(dns),
    allow: cidrMatcher(config.webhookAllowCidrs),
    timeoutMs: config.destinationTimeoutMs,
    retryBaseMs: config.destinationRetryBaseMs,
    retryMaxMs: config.destinationRetryMaxMs
  } satisfies AttemptOptions
})

/**
 * The engine's store: with DESTINATION_DB_CONNECTIONS > 0 on a Postgres pool of its own, so its recordings,
 * claims and settlements do not wait behind the workflow and ingest statements queued for the worker's
 * pool when those saturate it (a pool of 20 with a queue behind it at 1,000 workflow executions a second).
 * 0 (the default until a quiet benchmark shows the pool helps, BENCHMARKS *destinations*): the process' store. The layer is built fresh: Destinations.layer is memoized by reference,
 * and would otherwise be the process' instance, on the process' pool.
 */
export const EngineStoreLive = Layer.unwrap(
  Effect.map(
    Effect.service(AppConfig),
    (config): Layer.Layer<Destinations, SqlError.SqlError, Destinations> =>
      config.destinationDbConnections === 0
        ? Layer.effect(Destinations, Effect.service(Destinations))
        : Layer.fresh(Destinations.layer.pipe(
          Layer.provide(pgPool(config, config.destinationDbConnections, "mailstream-destinations"))
        ))
  )
)

export class DestinationEngine extends Context.Service<DestinationEngine, {
  /** Pumps a destination's due deliveries now. */
  readonly wake: (destinationId: string) => void
}>()("app/destinations/DestinationEngine") {
  /** The engine on whatever Destinations store is provided. */
  static readonly engine = Layer.effect(
    DestinationEngine,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const store = yield* Destinations
      const nats = yield* Nats
      const invalidations = yield* Invalidations
      const options = yield* attemptOptions
      const run = yield* FiberSet.makeRuntime<never, unknown, unknown>()
      const leaseMs = config.destinationTimeoutMs + 30_000

      // --- sending: one pump per destination (pump.ts) ---------------------------------------------------
      const wakeup = yield* makeWakeup
      const settle = (destinationId: string, batch: ReadonlyArray<Settled>) =>
        Effect.gen(function*() {
          const disabled = yield* store.settleMany(destinationId, batch, config.destinationDisableAfterFailures).pipe(
            Effect.catchCause((cause) =>
              Effect.as(Effect.logWarning("event destination attempts not recorded; retried after their lease", cause), false)
            )
          )
          if (disabled) {
            yield* Effect.logWarning("event destination disabled after failed attempts in a row", {
              destinationId,
              failures: config.destinationDisableAfterFailures
            })
          }
          // A retry is due at its own time: the due loop looks again for the next one (it may be the earliest).
          if (batch.some(({ outcome }) => outcome.nextAttemptAt !== null)) yield* wakeup.signal
        })
      const pumps = makePumps({
        concurrency: config.destinationConcurrency,
        leaseMs,
        timeoutMs: config.destinationTimeoutMs,
        claim: store.claim,
        attempt: (delivery) => attemptDelivery(delivery, options),
        settle,
        run: (effect) => {
          run(effect)
        }
      })
      const wake = pumps.wake

      // --- retries: the due loop ----------------------------------------------------------------------
      yield* Effect.forkScoped(runWhenDue({
        name: "event destinations",
        round: Effect.map(store.due, (due) => {
          for (const id of due) wake(id)
          return false
        }),
        nextDueIn: store.nextDueIn,
        wakeup,
        gap: Duration.millis(Math.min(200, config.destinationRetryBaseMs)),
        atMost: Duration.seconds(10)
      }))

      // --- the delivery log's retention -------------------------------------------------------------
      if (config.destinationLogRetentionDays > 0) {
        const pruneAll: Effect.Effect<void, unknown> = Effect.flatMap(
          store.prune(config.destinationLogRetentionDays, PRUNE_BATCH),
          (deleted) => (deleted === PRUNE_BATCH ? pruneAll : Effect.void)
        )
        yield* Effect.forkScoped(Effect.forever(
          pruneAll.pipe(
            Effect.catchCause((cause) => Effect.logWarning("event destinations: pruning the delivery log failed", cause)),
            Effect.andThen(Effect.sleep(Duration.minutes(10)))
          )
        ))
      }

      // --- recording: the OUT consumer ---------------------------------------------------------------
      // A batch is matched against its projects' destinations as they are when it is recorded (one query per
      // batch): a destination created just before an event gets it, whenever the change's announcement arrives.
      yield* invalidations.subscribe<DestinationsChanged>(DESTINATIONS_TOPIC, {
        onMessage: (change) => {
          if (change.wake !== undefined) wake(change.wake)
        },
        onGap: () => undefined
      })
      const projectOf = (item: Received): string | undefined => {
        if (item.source === "out") return parse<OutEvent>(item.message)?.projectId
        // <prefix>.ingest.<partition>.<projectId>.track
        return item.message.subject.split(".")[3]
      }

      /** The events a message carries: an OUT event, or an ingest envelope's tracked events (parsed only when its project has destinations). */
      const eventsOf = (item: Received, hasDestinations: (projectId: string) => boolean): ReadonlyArray<OutEvent> => {
        if (item.source === "out") {
          const event = parse<OutEvent>(item.message)
          return event !== undefined && typeof event.projectId === "string" && typeof event.name === "string" &&
              typeof event.id === "string"
            ? [event]
            : []
        }
        if (!hasDestinations(item.message.subject.split(".")[3] ?? "")) return []
        const envelope = parse<TrackMessage>(item.message)
        if (envelope?.kind !== "track" || !Array.isArray(envelope.events)) return []
        return envelope.events.map((event): OutEvent => ({
          id: event.eventId,
          projectId: envelope.projectId,
          name: event.name,
          contactId: event.contactId,
          email: event.email,
          data: event.data,
          at: event.at
        }))
      }

      const record = (items: ReadonlyArray<Received>) =>
        Effect.gen(function*() {
          const projectIds = new Set<string>()
          for (const item of items) {
            const projectId = projectOf(item)
            if (typeof projectId === "string") projectIds.add(projectId)
          }
          const byProject = yield* store.activeIn([...projectIds])
          const destinationsOf = (projectId: string) => byProject.get(projectId) ?? []
          const rows: Array<NewDelivery> = []
          for (const item of items) {
            for (const event of eventsOf(item, (projectId) => destinationsOf(projectId).length > 0)) {
              const destinations = destinationsOf(event.projectId)
              let body: string | undefined
              for (const destination of destinations) {
                if (!matchesAny(destination.events, event.name)) continue
                body ??= deliveryBody(event)
                rows.push({
                  destinationId: destination.id,
                  projectId: event.projectId,
                  eventId: event.id,
                  eventType: event.name,
                  contactId: event.contactId ?? null,
                  body,
                  eventAt: event.at
                })
              }
            }
          }
          // The fresh deliveries this worker's pumps have room for are recorded claimed, and started once committed.
          const rooms = new Map<string, number>()
          for (const row of rows) if (!rooms.has(row.destinationId)) rooms.set(row.destinationId, pumps.room(row.destinationId))
          const recorded = yield* store.recordAndClaim(rows, retryUntilFrom(config.destinationRetryHours), rooms, leaseMs)
          for (const item of items) item.message.ack()
          const claimed = new Map<string, Array<ClaimedDelivery>>()
          for (const delivery of recorded.claimed) {
            const list = claimed.get(delivery.destinationId)
            if (list) list.push(delivery)
            else claimed.set(delivery.destinationId, [delivery])
          }
          for (const [id, deliveries] of claimed) pumps.offer(id, deliveries)
          for (const id of recorded.waiting) wake(id)
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logWarning("event destinations: recording a batch failed; redelivered", cause),
              Effect.sync(() => {
                for (const item of items) item.message.nak(1000)
              })
            )
          )
        )

      const received = yield* Queue.unbounded<Received>()
      /** A durable consumer of `stream` (shared by the workers), its messages queued for `record` as they come. */
      const consumeFrom = (source: Received["source"], stream: string, durable: string, filter: string) =>
        Effect.gen(function*() {
          // Created before the worker says it is ready: events from then on are delivered.
          const ensureConsumer = Effect.tryPromise(async () => {
            const existing = await nats.jsm.consumers.info(stream, durable).catch(() => undefined)
            if (existing) return
            await nats.jsm.consumers.add(stream, {
              durable_name: durable,
              filter_subject: filter,
              ack_policy: AckPolicy.Explicit,
              ack_wait: 60 * 1_000_000_000,
              max_ack_pending: 20_000,
              // From its creation on: events from before destinations existed have no one to go to.
              deliver_policy: DeliverPolicy.New
            }).catch(async (error) => {
              if (!(await nats.jsm.consumers.info(stream, durable).catch(() => undefined))) throw error
            })
          })
          yield* ensureConsumer
          const consume = Effect.gen(function*() {
            yield* ensureConsumer
            const messages = yield* Effect.acquireRelease(
              Effect.tryPromise(async () => (await nats.js.consumers.get(stream, durable)).consume({ max_messages: CONSUMER_BATCH })),
              (iterator) => Effect.promise(() => iterator.close().catch(() => undefined)).pipe(Effect.timeout("1 second"), Effect.ignore)
            )
            yield* Effect.promise(async () => {
              for await (const message of messages) Queue.offerUnsafe(received, { source, message })
            })
          }).pipe(
            Effect.scoped,
            Effect.tapCause((cause) => Effect.logWarning(`event destinations: the ${stream} consumer stopped; starting again`, cause)),
            Effect.retry(Schedule.spaced(Duration.seconds(1))),
            Effect.forever
          )
          yield* Effect.forkScoped(consume)
        })
      // Emitted events (stream OUT), and tracked events as the api publishes them (stream IN's ingest envelopes).
      yield* consumeFrom("out", nats.names.outStream, `${nats.prefix}_destinations`, nats.names.outAll)
      yield* consumeFrom("track", nats.names.inStream, `${nats.prefix}_destinations_tracked`, `${nats.prefix}.ingest.*.*.track`)
      const recorder = yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeAll(received), record)))
      yield* Effect.addFinalizer(() => Fiber.interrupt(recorder))

      return DestinationEngine.of({ wake })
    })
  )

  /** The engine on its own pool (EngineStoreLive): what the worker runs. */
  static readonly layer = DestinationEngine.engine.pipe(Layer.provide(EngineStoreLive))
}
