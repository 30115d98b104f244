/**
 * Publishes tracked events to stream IN. Concurrent events of one project are grouped into one
 * envelope message on the project's ingest subject (one PubAck for many requests, whatever lanes
 * they belong to: a worker splits envelopes into lane messages, see actors/IngestSplitter.ts); each
 * envelope has its own Nats-Msg-Id, so a republished envelope is dropped by JetStream. A request is
 * answered only after its envelope's PubAck; a batch request's events go in one flush, in order.
 */
import { Context, Data, Duration, Effect, Layer } from "effect"
import { uuidv7 } from "../domain/ids.ts"
import { makeCallbackGroupCommit } from "../lib/CallbackGroupCommit.ts"
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
  /** `publishAll` for plain code: `done` is called once, after the PubAck (undefined) or with the failure. */
  readonly publishNow: (
    projectId: string,
    events: ReadonlyArray<TrackedEvent>,
    done: (error: StreamUnavailable | undefined) => void
  ) => void
}>()("app/ingest/EventPublisher") {
  static readonly layer = Layer.effect(
    EventPublisher,
    Effect.gen(function*() {
      const nats = yield* Nats
      // Well under the server's max payload (1 MiB by default), whatever it is configured to.
      const maxEnvelopeBytes = () => Math.min(ENVELOPE_BYTES, (nats.connection.info?.max_payload ?? 1024 * 1024) / 2)
      const timeout = Duration.toMillis(PUBLISH_TIMEOUT)

      /** A project's envelopes (more than one past 256 KiB) one after the other, so a batch request's events reach the stream in its order. */
      const publishProject = async (projectId: string, events: ReadonlyArray<TrackedEvent>) => {
        for (const envelope of envelopesOf(projectId, events, maxEnvelopeBytes())) {
          await nats.js.publish(nats.names.ingestSubject(projectId, nats.partitions), envelope.json, { msgID: uuidv7(), timeout })
        }
      }

      const publishBatch = (items: ReadonlyArray<{ readonly projectId: string; readonly event: TrackedEvent }>) => {
        // One envelope per project (per flush), its events in order; projects concurrently.
        const byProject = new Map<string, Array<TrackedEvent>>()
        for (const { projectId, event } of items) {
          const events = byProject.get(projectId)
          if (events) events.push(event)
          else byProject.set(projectId, [event])
        }
        return Promise.all(Array.from(byProject, ([projectId, events]) => publishProject(projectId, events)))
      }

      // The client never hangs on a stalled stream: bounded wait, then 503. A request's events are one
      // submission, so they go to one flush together.
      const batcher = makeCallbackGroupCommit({
        flush: publishBatch,
        toError: (cause) => new StreamUnavailable({ cause }),
        maxBatch: 2000,
        concurrency: 4,
        // One flush at a time while events trickle in (each flush is a write and a PubAck per envelope);
        // a backlog of a tenth of a flush gets the other three.
        busyFlushAt: 200,
        maxWait: {
          millis: Duration.toMillis(Duration.sum(PUBLISH_TIMEOUT, Duration.seconds(1))),
          onTimeout: () => new StreamUnavailable({ cause: "publish timed out" })
        }
      })
      yield* Effect.addFinalizer(() => Effect.sync(batcher.close))

      const publishNow: EventPublisher["Service"]["publishNow"] = (projectId, events, done) =>
        batcher.submit(events.map((event) => ({ projectId, event })), done)
      const publishAll = (projectId: string, events: ReadonlyArray<TrackedEvent>) =>
        Effect.callback<void, StreamUnavailable>((resume) =>
          publishNow(projectId, events, (error) => resume(error === undefined ? Effect.void : Effect.fail(error)))
        )

      return EventPublisher.of({ publish: (projectId, event) => publishAll(projectId, [event]), publishAll, publishNow })
    })
  )
}
