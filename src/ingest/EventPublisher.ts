/**
 * Publishes tracked events to stream IN. Concurrent events of one project are grouped into one
 * envelope message on the project's ingest subject (one PubAck for many requests, whatever lanes
 * they belong to: a worker splits envelopes into lane messages, see actors/IngestSplitter.ts); each
 * envelope has its own Nats-Msg-Id, so a republished envelope is dropped by JetStream. A request is
 * answered only after its envelope's PubAck; a batch request's events go in one flush, in order.
 */
import { Context, Data, Duration, Effect, Layer } from "effect"
import { uuidv7 } from "../domain/ids.ts"
import { makeGroupCommit } from "../lib/GroupCommit.ts"
import { INGEST_POSITIONS, type TrackedEvent } from "../stream/messages.ts"
import { Nats } from "../stream/Nats.ts"

export type { TrackedEvent } from "../stream/messages.ts"

export interface TrackEnvelope {
  readonly kind: "track"
  readonly projectId: string
  readonly events: ReadonlyArray<TrackedEvent>
}

export class StreamUnavailable extends Data.TaggedError("StreamUnavailable")<{ readonly cause: unknown }> {}

const PUBLISH_TIMEOUT = Duration.seconds(3)
/** Envelopes are cut at this size so a burst of events with large data never exceeds NATS' max payload. */
const ENVELOPE_BYTES = 256 * 1024

/**
 * The project's events in envelopes of at most `maxBytes` and INGEST_POSITIONS events (one event alone
 * may exceed the bytes: requests are capped at 1 MiB, so it still fits the server's limit), in order.
 */
export const envelopesOf = (projectId: string, events: ReadonlyArray<TrackedEvent>, maxBytes: number) => {
  const out: Array<{ readonly projectId: string; readonly json: string }> = []
  let current: Array<string> = []
  let bytes = 0
  const close = () => {
    if (current.length === 0) return
    out.push({ projectId, json: `{"kind":"track","projectId":${JSON.stringify(projectId)},"events":[${current.join(",")}]}` })
    current = []
    bytes = 0
  }
  for (const event of events) {
    const json = JSON.stringify(event)
    const size = Buffer.byteLength(json)
    if (current.length > 0 && (bytes + size > maxBytes || current.length === INGEST_POSITIONS)) close()
    current.push(json)
    bytes += size + 1
  }
  close()
  return out
}

export class EventPublisher extends Context.Service<EventPublisher, {
  readonly publish: (projectId: string, event: TrackedEvent) => Effect.Effect<void, StreamUnavailable>
  /** Several events of one project (a batch request), stored on the stream in this order. */
  readonly publishAll: (projectId: string, events: ReadonlyArray<TrackedEvent>) => Effect.Effect<void, StreamUnavailable>
}>()("app/ingest/EventPublisher") {
  static readonly layer = Layer.effect(
    EventPublisher,
    Effect.gen(function*() {
      const nats = yield* Nats
      // Well under the server's max payload (1 MiB by default), whatever it is configured to.
      const maxEnvelopeBytes = () => Math.min(ENVELOPE_BYTES, (nats.connection.info?.max_payload ?? 1024 * 1024) / 2)

      const publishBatch = (items: ReadonlyArray<{ projectId: string; event: TrackedEvent }>) =>
        Effect.gen(function*() {
          // One envelope per project (per flush), its events in order.
          const byProject = new Map<string, Array<TrackedEvent>>()
          for (const { projectId, event } of items) {
            const events = byProject.get(projectId)
            if (events) events.push(event)
            else byProject.set(projectId, [event])
          }
          // Projects concurrently; a project's envelopes (more than one past 256 KiB) one after the
          // other, so the events of a batch request reach the stream in its order.
          yield* Effect.forEach(byProject, ([projectId, events]) =>
            Effect.forEach(envelopesOf(projectId, events, maxEnvelopeBytes()), (envelope) =>
              Effect.tryPromise({
                try: () =>
                  nats.js.publish(nats.names.ingestSubject(envelope.projectId, nats.partitions), envelope.json, {
                    msgID: uuidv7(),
                    timeout: Duration.toMillis(PUBLISH_TIMEOUT)
                  }),
                catch: (cause) => new StreamUnavailable({ cause })
              }), { discard: true }), { concurrency: "unbounded", discard: true })
          return items.map(() => undefined)
        })

      // The client never hangs on a stalled stream: bounded wait, then 503.
      const batcher = yield* makeGroupCommit({
        flush: publishBatch,
        maxBatch: 2000,
        concurrency: 4,
        maxWait: {
          duration: Duration.sum(PUBLISH_TIMEOUT, Duration.seconds(1)),
          onTimeout: () => new StreamUnavailable({ cause: "publish timed out" })
        }
      })

      return EventPublisher.of({
        publish: (projectId, event) => batcher.submit({ projectId, event }),
        publishAll: (projectId, events) => Effect.asVoid(batcher.submitAll(events.map((event) => ({ projectId, event }))))
      })
    })
  )
}
