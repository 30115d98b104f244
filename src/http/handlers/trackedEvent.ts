/**
 * One /v1/track body: its checks beyond the schema's, as field errors, and the event the actor
 * receives for it. Shared by /v1/track and each event of /v1/track/batch, so both apply one set of rules.
 */
import { Result, Schema } from "effect"
import { eventVariables, toDataPatch } from "../../domain/customData.ts"
import { normalizeEmail } from "../../domain/email.ts"
import type { ResolvedContact } from "../../ingest/ContactDirectory.ts"
import type { TrackedEvent } from "../../ingest/EventPublisher.ts"
import { TrackBody } from "../api/track.ts"
import type { FieldError } from "../errors.ts"
import { issueToFieldErrors } from "../validation.ts"
import { dataErrors } from "./contactData.ts"

/** A decoded /v1/track body. */
export type TrackPayload = Schema.Schema.Type<typeof TrackBody>

// The decoder HttpApi builds for /v1/track's body: a union of its payload schemas, with the options of
// Api.ts (every invalid field at once), so a batch event gets the very errors /v1/track would answer.
export const decodeTrackBody = Schema.decodeUnknownResult(Schema.Union([TrackBody]), { errors: "all" })

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
