/**
 * POST /v1/track/batch: up to 500 /v1/track bodies in one request. Each event is checked on its own
 * (trackedEvent.ts, the rules of /v1/track); the valid ones count against the rate limit, their
 * emails are resolved together (one grouped ContactDirectory statement), and they are published to
 * stream IN; we answer after the PubAck of every one, listing the rejected events by index.
 */
import { Clock, Effect } from "effect"
import { normalizeEmail } from "../../domain/email.ts"
import { derivedUuidv7, indexedUuidv7 } from "../../domain/ids.ts"
import { ContactDirectory, type ResolvedContact } from "../../ingest/ContactDirectory.ts"
import { EventPublisher } from "../../ingest/EventPublisher.ts"
import { CurrentProject } from "../api/security.ts"
import { enforceRateLimit } from "../auth.ts"
import { type FieldError } from "../errors.ts"
import { ServiceUnavailable } from "../api/statusErrors.ts"
import { Idempotency } from "../Idempotency.ts"
import { RateLimiter } from "../RateLimiter.ts"
import { checkTrackEvent, toTrackedEvent, type TrackPayload } from "./trackedEvent.ts"

const streamUnavailable = ServiceUnavailable.of(
  "The event stream is unavailable; some events of the batch may not be recorded",
  "Retry the whole batch after Retry-After with the same Idempotency-Key: events already recorded are not recorded twice."
)

interface Valid {
  readonly index: number
  readonly payload: TrackPayload
  readonly email: string
}

/**
 * One contact per distinct email of the batch, the misses of the ContactDirectory's cache in one
 * statement. A new contact takes `subscribed` from its first event, as /v1/track would.
 */
const resolveContacts = (directory: ContactDirectory["Service"], projectId: string, events: ReadonlyArray<Valid>) => {
  const firsts = new Map<string, Valid>()
  for (const event of events) if (!firsts.has(event.email)) firsts.set(event.email, event)
  const emails = [...firsts.keys()]
  return directory.resolveAll(projectId, emails.map((email) => ({ email, subscribedIfNew: firsts.get(email)!.payload.subscribed ?? true })))
    .pipe(
      Effect.map((contacts) => new Map<string, ResolvedContact>(emails.map((email, index) => [email, contacts[index]!]))),
      Effect.orDie
    )
}

export const makeTrackBatch = Effect.gen(function*() {
  const directory = yield* ContactDirectory
  const publisher = yield* EventPublisher
  const idempotency = yield* Idempotency
  const rateLimiter = yield* RateLimiter

  return Effect.fnUntraced(function*({ payload, headers }: {
    readonly payload: { readonly events: ReadonlyArray<unknown> }
    readonly headers: { readonly "idempotency-key"?: string | undefined }
  }) {
    const project = yield* CurrentProject
    const valid: Array<Valid> = []
    const rejected: Array<{ index: number; errors: Array<FieldError> }> = []
    payload.events.forEach((input, index) => {
      const checked = checkTrackEvent(input)
      if ("errors" in checked) rejected.push({ index, errors: checked.errors })
      else valid.push({ index, payload: checked.payload, email: normalizeEmail(checked.payload.email) })
    })
    const at = new Date(yield* Clock.currentTimeMillis).toISOString()
    return yield* idempotency.once(
      project.id,
      headers["idempotency-key"],
      "POST /v1/track/batch",
      // With a key, event ids derive from the claim's operation id (the same for every attempt at the
      // key) and the index, so a retried batch repeats its ids and the actor drops what it already stored.
      ({ operationId, repeatable }) =>
        Effect.gen(function*() {
          // The auth middleware counted the request as one; each further accepted event counts too.
          if (valid.length > 1) {
            yield* enforceRateLimit(
              yield* rateLimiter.check(project.id, valid.length - 1),
              " (a batch counts one request per accepted event)"
            )
          }
          const contacts = yield* resolveContacts(directory, project.id, valid)
          // Without a key the batch is never attempted again: its ids need not be derivable, only unique.
          const eventIdOf = repeatable ? derivedUuidv7 : indexedUuidv7
          const announced = new Set<string>()
          const events = valid.map(({ index, payload, email }) => {
            const contact = contacts.get(email)!
            // Only the contact's first event says the api created it (the actor then evaluates its segments).
            const created = contact.created && !announced.has(email)
            announced.add(email)
            return toTrackedEvent(payload, { eventId: eventIdOf(operationId, index), contact: { id: contact.id, created }, at })
          })
          // In one flush, in batch order: each contact's events reach the stream in the order given.
          yield* publisher.publishAll(project.id, events).pipe(
            Effect.catchTag("StreamUnavailable", () => Effect.fail(streamUnavailable))
          )
          return { success: true as const, data: { accepted: valid.length, rejected } }
        })
    )
  })
})
