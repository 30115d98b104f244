/**
 * POST /v1/track (and /events/track). The hot path: cached key, group-committed rate-limit counter,
 * contact id from the ContactDirectory (cache, or one grouped statement for all misses), then the
 * event is published to stream IN in a per-project envelope; we answer after the PubAck. The
 * project's actor stores the event and applies the contact changes in stream order.
 * POST /v1/track/batch does the same for many events at once (trackBatch.ts).
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { normalizeEmail } from "../../domain/email.ts"
import { uuidv7 } from "../../domain/ids.ts"
import type { Project } from "../../store/Projects.ts"
import { ContactDirectory, type ResolvedContact } from "../../ingest/ContactDirectory.ts"
import { EventPublisher } from "../../ingest/EventPublisher.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { Idempotency } from "../Idempotency.ts"
import { dataErrors, validateData } from "./contactData.ts"
import { makeTrackBatch } from "./trackBatch.ts"
import { toTrackedEvent, type TrackPayload } from "./trackedEvent.ts"
import { ServiceUnavailable, ValidationFailed } from "../api/statusErrors.ts"

const streamUnavailable = ServiceUnavailable.of("The event stream is unavailable; the event was not recorded")

/** The paths /v1/track answers on (its alias is the reference platform's). */
export type TrackPath = "/v1/track" | "/events/track"

/**
 * One tracked event, for the project in CurrentProject: the work of /v1/track behind its decoded body,
 * shared by the HttpApi handler and the fast path (../trackFastPath.ts).
 */
export const makeTrack = Effect.gen(function*() {
  const directory = yield* ContactDirectory
  const publisher = yield* EventPublisher
  const idempotency = yield* Idempotency

  return Effect.fnUntraced(function*({ payload, headers }: {
    readonly payload: TrackPayload
    readonly headers: { readonly "idempotency-key"?: string | undefined }
  }, path: TrackPath) {
    const project = yield* CurrentProject
    yield* validateData(payload.data)
    const email = normalizeEmail(payload.email)
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    return yield* idempotency.once(
      project.id,
      headers["idempotency-key"],
      `POST ${path}`,
      // The claim's operation id, the same for every attempt at one key: an attempt repeated after a
      // crash that followed the PubAck carries the event the actor already stored, and is dropped.
      ({ operationId: eventId }) =>
        Effect.gen(function*() {
          const contact = yield* directory.resolve(project.id, email, payload.subscribed ?? true).pipe(Effect.orDie)
          yield* publisher.publish(project.id, toTrackedEvent(payload, { eventId, contact, at: timestamp })).pipe(
            Effect.catchTag("StreamUnavailable", () => Effect.fail(streamUnavailable))
          )
          return { success: true as const, data: { contact: contact.id, event: eventId, timestamp } }
        })
    )
  })
})

/** Runs an Effect for plain code: its value, or a rejection with its Cause (a `CauseOf`). */
export type RunForValue = <A, E>(effect: Effect.Effect<A, E>) => Promise<A>

/** What /v1/track answers for a tracked event. */
export interface Tracked {
  readonly success: true
  readonly data: { readonly contact: string; readonly event: string; readonly timestamp: string }
}

/**
 * `makeTrack` for plain code, when no Idempotency-Key was sent (the fast path): the same steps and
 * answers, but a cached contact costs no Effect at all and the event joins the publisher's next
 * envelope through a callback; only a cache miss runs the directory's Effect (`runForValue`).
 * Why: per request, a fiber and its Effects cost the api more CPU than publishing the event; and a
 * callback rather than promises, since each promise and its turn cost a request too. A failure found
 * at once is thrown; one found later goes to `done`, which is called once, unless the call threw.
 */
export const makeTrackNow = Effect.gen(function*() {
  const directory = yield* ContactDirectory
  const publisher = yield* EventPublisher
  const clock = yield* Clock.Clock
  // Requests read in one turn of the event loop mostly share a millisecond: its ISO text is made once.
  let lastMillis = Number.NaN
  let lastIso = ""
  const isoAt = (millis: number) => {
    if (millis !== lastMillis) {
      lastIso = new Date(millis).toISOString()
      lastMillis = millis
    }
    return lastIso
  }

  return (
    project: Project,
    payload: TrackPayload,
    runForValue: RunForValue,
    done: (error: unknown, value?: Tracked) => void
  ): void => {
    // The body's schema checked that the data can be stored: only the limits are left.
    const errors = dataErrors(payload.data, { storableChecked: true })
    if (errors.length > 0) throw ValidationFailed.of(errors)
    const email = normalizeEmail(payload.email)
    const timestamp = isoAt(clock.currentTimeMillisUnsafe())
    // Without a key the operation is never repeated: its id is a fresh one (Idempotency.once's).
    const eventId = uuidv7()
    const publish = (contact: ResolvedContact) =>
      publisher.publishNow(
        project.id,
        [toTrackedEvent(payload, { eventId, contact, at: timestamp })],
        (error) =>
          error === undefined
            ? done(undefined, { success: true, data: { contact: contact.id, event: eventId, timestamp } })
            : done(streamUnavailable)
      )
    const contact = directory.cached(project.id, email)
    if (contact) return publish(contact)
    runForValue(Effect.orDie(directory.resolve(project.id, email, payload.subscribed ?? true))).then((resolved) => {
      try {
        publish(resolved)
      } catch (error) {
        done(error)
      }
    }, done)
  }
})

export const TrackHandlers = HttpApiBuilder.group(
  Api,
  "track",
  Effect.fnUntraced(function*(handlers) {
    const track = yield* makeTrack
    const trackBatch = yield* makeTrackBatch

    return handlers
      .handle("track", (request) => rendered(track(request, "/v1/track")))
      .handle("trackAlias", (request) => rendered(track(request, "/events/track")))
      .handle("trackBatch", (request) => rendered(trackBatch(request)))
  })
)
