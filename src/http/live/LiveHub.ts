/**
 * The fan-out behind GET /projects/:id/live (server-sent events). An api process keeps one plain NATS
 * subscription to stream OUT's subjects and one to the workers' "changed" signals (stream/LiveSignals.ts),
 * made when its first client connects and dropped with its last, shared by every client: a message is
 * parsed once per process and queued for the clients of its project only.
 *
 * Bounded everywhere: LIVE_MAX_CLIENTS streams per process and LIVE_MAX_CLIENTS_PER_USER per user (429
 * past either); each client has a queue of LIVE_CLIENT_BUFFER frames between NATS and its socket, and a
 * client whose queue is full (it stopped reading, so its socket's buffers are full too) is cut off rather
 * than buffered without bound: its browser reconnects and refetches. A heartbeat comment every
 * LIVE_HEARTBEAT_SECONDS keeps proxies from closing an idle stream, and fills a vanished client's queue.
 */
import type { Subscription } from "@nats-io/transport-node"
import { type Cause, Context, Duration, Effect, Layer, Queue, Stream } from "effect"
import { AppConfig } from "../../config.ts"
import { HttpMetrics } from "../../observability/Metrics.ts"
import type { OutEvent } from "../../stream/messages.ts"
import { Nats } from "../../stream/Nats.ts"
import type { LiveEvent } from "../api/live.ts"
import { RateLimited } from "../api/statusErrors.ts"

/** What the hub needs of a client's connection: a way to cut it off, and to hear that it closed. */
export interface LiveConnection {
  readonly destroy: () => void
  /** Calls `listener` once the connection closes (at once if it has closed already). */
  readonly onClose: (listener: () => void) => void
}

interface Client {
  readonly projectId: string
  readonly userId: string
  readonly queue: Queue.Queue<Uint8Array, Cause.Done>
  readonly connection: LiveConnection
}

const encoder = new TextEncoder()
const frame = (event: LiveEvent) => encoder.encode(`data: ${JSON.stringify(event)}\n\n`)
const HEARTBEAT = encoder.encode(": ping\n\n")
/** The first frame: EventSource's own reconnection delay (the dashboard's client has its own backoff), then `ready`. */
const READY = encoder.encode(`retry: 3000\ndata: ${JSON.stringify({ type: "ready" } satisfies LiveEvent)}\n\n`)
const RESYNC = frame({ type: "resync" })

/** The ids of an emitted event's data a page may filter on. */
const ID_KEYS = ["segmentId", "campaignId", "workflowId", "templateId", "emailId"] as const

const emittedOf = (event: OutEvent): LiveEvent => {
  const ids: Record<string, string> = {}
  for (const key of ID_KEYS) {
    const value = event.data[key]
    if (typeof value === "string") ids[key] = value
  }
  return { type: "event", name: event.name, contactId: event.contactId, at: event.at, ...ids }
}

const tooMany = (message: string) =>
  new RateLimited({
    code: "TOO_MANY_LIVE_STREAMS",
    message,
    suggestion: "Close other dashboard tabs, or retry later: pages still work without live updates.",
    headers: { "retry-after": "30" }
  })

export class LiveHub extends Context.Service<LiveHub, {
  /**
   * Admits a client of the project (429 past a cap) and answers its frames: the stream never ends by
   * itself; its end (the client went, was cut off, or the process stops) removes the client.
   */
  readonly open: (projectId: string, userId: string, connection: LiveConnection) => Effect.Effect<Stream.Stream<Uint8Array>, RateLimited>
  /** Ends every stream (their queued frames sent first): the process is stopping. */
  readonly closeAll: Effect.Effect<void>
  /** Streams open now. */
  readonly size: Effect.Effect<number>
}>()("app/http/LiveHub") {
  static readonly layer = Layer.effect(
    LiveHub,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const nats = yield* Nats
      const byProject = new Map<string, Set<Client>>()
      const perUser = new Map<string, number>()
      let count = 0
      let subscriptions: Array<Subscription> = []

      const each = (f: (client: Client) => void) => {
        for (const clients of byProject.values()) for (const client of clients) f(client)
      }

      const remove = (client: Client) => {
        const clients = byProject.get(client.projectId)
        if (!clients?.delete(client)) return
        if (clients.size === 0) byProject.delete(client.projectId)
        const mine = (perUser.get(client.userId) ?? 1) - 1
        if (mine === 0) perUser.delete(client.userId)
        else perUser.set(client.userId, mine)
        count--
        HttpMetrics.liveStreams.set(count)
        if (count === 0) unsubscribe()
      }

      /** A client too far behind: forgotten, its connection cut (its request's fiber then ends its stream). */
      const drop = (client: Client) => {
        remove(client)
        HttpMetrics.liveDropped.inc()
        Queue.shutdownUnsafe(client.queue)
        client.connection.destroy()
      }

      const deliver = (client: Client, bytes: Uint8Array) => {
        if (!Queue.offerUnsafe(client.queue, bytes)) drop(client)
      }

      const toProject = (projectId: string | undefined, make: () => Uint8Array) => {
        const clients = projectId === undefined ? undefined : byProject.get(projectId)
        if (!clients) return
        let bytes: Uint8Array
        try {
          bytes = make()
        } catch {
          return // not JSON: nothing a page could use
        }
        for (const client of [...clients]) deliver(client, bytes)
      }

      /** `<prefix>.<kind>.<projectId>...`: the prefix has no dots (PREFIX_PATTERN). */
      const projectOf = (subject: string) => subject.split(".", 3)[2]

      const subscribe = () => {
        subscriptions = [
          nats.connection.subscribe(nats.names.outAll, {
            callback: (error, message) => {
              if (error) return each((client) => deliver(client, RESYNC))
              toProject(projectOf(message.subject), () => frame(emittedOf(message.json<OutEvent>())))
            }
          }),
          nats.connection.subscribe(nats.names.liveAll, {
            callback: (error, message) => {
              if (error) return each((client) => deliver(client, RESYNC))
              toProject(projectOf(message.subject), () => frame({ type: "changed", at: message.json<{ at: string }>().at }))
            }
          })
        ]
      }

      function unsubscribe() {
        for (const subscription of subscriptions) subscription.unsubscribe()
        subscriptions = []
      }

      // Core NATS keeps nothing for a disconnected subscriber: after a reconnect every page refetches.
      yield* Effect.forkScoped(Effect.promise(async () => {
        for await (const status of nats.connection.status()) {
          if (status.type === "reconnect") each((client) => deliver(client, RESYNC))
        }
      }))

      yield* Effect.forever(Effect.andThen(
        Effect.sleep(Duration.seconds(config.liveHeartbeatSeconds)),
        Effect.sync(() => each((client) => deliver(client, HEARTBEAT)))
      )).pipe(Effect.forkScoped)

      const open = (projectId: string, userId: string, connection: LiveConnection) =>
        Effect.gen(function*() {
          if (count >= config.liveMaxClients) {
            HttpMetrics.liveRefused.inc()
            return yield* tooMany(
              config.liveMaxClients === 0
                ? "Live updates are turned off on this server (LIVE_MAX_CLIENTS=0)"
                : `This server already serves ${config.liveMaxClients} live-update streams (LIVE_MAX_CLIENTS)`
            )
          }
          if ((perUser.get(userId) ?? 0) >= config.liveMaxClientsPerUser) {
            HttpMetrics.liveRefused.inc()
            return yield* tooMany(`You already have ${config.liveMaxClientsPerUser} live-update streams open (LIVE_MAX_CLIENTS_PER_USER)`)
          }
          const queue = yield* Queue.bounded<Uint8Array, Cause.Done>(config.liveClientBuffer)
          const client: Client = { projectId, userId, queue, connection }
          if (count === 0) subscribe()
          const clients = byProject.get(projectId) ?? new Set()
          clients.add(client)
          byProject.set(projectId, clients)
          perUser.set(userId, (perUser.get(userId) ?? 0) + 1)
          count++
          HttpMetrics.liveStreams.set(count)
          deliver(client, READY)
          // Whichever comes first: the connection closes (even before its stream starts), or the stream ends.
          connection.onClose(() => remove(client))
          return Stream.fromQueue(queue).pipe(Stream.ensuring(Effect.sync(() => remove(client))))
        })

      const closeAll = Effect.sync(() => {
        each((client) => {
          remove(client)
          Queue.endUnsafe(client.queue)
        })
      })
      yield* Effect.addFinalizer(() => closeAll)

      return LiveHub.of({ open, closeAll, size: Effect.sync(() => count) })
    })
  )
}
