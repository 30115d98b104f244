/**
 * One /v1/track body: its checks beyond the schema's, as field errors, and the event the actor
 * receives for it. Shared by /v1/track and each event of /v1/track/batch, so both apply one set of rules.
 */
import { Result, Schema } from "effect"
import { eventVariables, isPlainObject, toDataPatch } from "../../domain/customData.ts"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { isReservedEventName } from "../../domain/events.ts"
import { isStorableText, storableProblem } from "../../domain/storable.ts"
import type { ResolvedContact } from "../../ingest/ContactDirectory.ts"
import type { TrackedEvent } from "../../ingest/EventPublisher.ts"
import { isEventNameShape, TrackBody } from "../api/track.ts"
import type { FieldError } from "../errors.ts"
import { issueToFieldErrors } from "../api/fieldErrors.ts"
import { dataErrors } from "./contactData.ts"

/** A decoded /v1/track body. */
export type TrackPayload = Schema.Schema.Type<typeof TrackBody>

// The decoder HttpApi builds for /v1/track's body: a union of its payload schemas, with the options of
// Api.ts (every invalid field at once), so a batch event gets the very errors /v1/track would answer.
const decodeWithSchema = Schema.decodeUnknownResult(Schema.Union([TrackBody]), { errors: "all" })

const TRACK_BODY_KEYS: ReadonlySet<string> = new Set(Object.keys(TrackBody.fields))

/**
 * TrackBody's rules as plain checks, with the predicates its filters use: the body as the schema
 * decodes it when every rule holds, undefined otherwise (then the schema decodes it and names what is
 * wrong). Decoding with the schema was a quarter of the api's CPU under /v1/track/batch; this path
 * gives the same payload for every body it takes (test/http/trackBodyDecode.test.ts compares them).
 * Bodies with keys TrackBody does not declare go to the schema, which drops those keys.
 */
export const trackBodyAsIs = (input: unknown): TrackPayload | undefined => {
  if (!isPlainObject(input)) return undefined
  for (const key in input) if (!TRACK_BODY_KEYS.has(key)) return undefined
  const { email, event, subscribed, preserveExistingSubscription, data } = input
  if (typeof email !== "string" || !isStorableText(email) || !isValidEmail(email.trim())) return undefined
  if (typeof event !== "string" || !isStorableText(event) || !isEventNameShape(event) || isReservedEventName(event)) return undefined
  if (subscribed !== undefined && typeof subscribed !== "boolean") return undefined
  if (preserveExistingSubscription !== undefined && typeof preserveExistingSubscription !== "boolean") return undefined
  if (data !== undefined && (!isPlainObject(data) || storableProblem(data) !== undefined)) return undefined
  return {
    email,
    event,
    ...(subscribed !== undefined ? { subscribed } : {}),
    ...(preserveExistingSubscription !== undefined ? { preserveExistingSubscription } : {}),
    ...(data !== undefined ? { data: { ...data } } : {})
  }
}

/** A /v1/track body decoded as HttpApi decodes it: the payload, or the schema's issue. */
export const decodeTrackBody = (input: unknown): ReturnType<typeof decodeWithSchema> => {
  const payload = trackBodyAsIs(input)
  return payload !== undefined ? Result.succeed(payload) : decodeWithSchema(input)
}

/** A batch item checked exactly as /v1/track checks its body: the payload, or its field errors. */
export const checkTrackEvent = (input: unknown): { readonly payload: TrackPayload } | { readonly errors: Array<FieldError> } => {
  const decoded = decodeTrackBody(input)
  if (Result.isFailure(decoded)) return { errors: issueToFieldErrors(decoded.failure.issue) }
  const errors = dataErrors(decoded.success.data)
  return errors.length > 0 ? { errors } : { payload: decoded.success }
}

/** The event the actor receives for a valid /v1/track body. */
export const toTrackedEvent = (payload: TrackPayload, ids: {
  readonly eventId: string
  readonly contact: ResolvedContact
  readonly at: string
}): TrackedEvent => {
  const patch = toDataPatch(payload.data)
  return {
    eventId: ids.eventId,
    contactId: ids.contact.id,
    contactCreated: ids.contact.created,
    email: normalizeEmail(payload.email),
    name: payload.event.trim(),
    // A new contact was created with `subscribed` already; preserving leaves an existing one as it is.
    subscribed: payload.preserveExistingSubscription === true ? null : payload.subscribed ?? null,
    set: patch.set,
    remove: patch.remove,
    data: eventVariables(patch),
    at: ids.at
  }
}
