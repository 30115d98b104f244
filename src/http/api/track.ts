import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { isReservedEventName } from "../../domain/events.ts"
import { bodyErrors, commonErrors, ErrorDocs } from "./errors.ts"
import { CustomData, Email, IdempotencyHeaders, Text, Timestamp } from "./schemas.ts"
import { PublicKeyAuth } from "./security.ts"

export const EventName = Text.check(
  Schema.makeFilter((value: string) => value.trim().length > 0 && value.length <= 255 && !/[\x00-\x1f]/.test(value), {
    expected: "an event name of 1 to 255 characters, without control characters",
    code: "invalid_string"
  } as Schema.Annotations.Filter),
  Schema.makeFilter((value: string) => !isReservedEventName(value), {
    expected: "an event name that is not reserved (email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry|exit)",
    code: "reserved_event"
  } as Schema.Annotations.Filter)
)

const TrackBody = Schema.Struct({
  email: Email,
  event: EventName,
  subscribed: Schema.optional(Schema.Boolean),
  preserveExistingSubscription: Schema.optional(Schema.Boolean).annotate({
    description: "true: `subscribed` applies only when this request creates the contact; an existing contact keeps its state " +
      "(for one-call double opt-in with subscribed: false)"
  }),
  data: Schema.optional(CustomData)
})

const TrackSuccess = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({ contact: Schema.String, event: Schema.String, timestamp: Timestamp })
})

const trackEndpoint = <const Name extends string, const Path extends `/${string}`>(name: Name, path: Path) =>
  HttpApiEndpoint.post(name, path, {
    payload: TrackBody,
    headers: IdempotencyHeaders,
    success: TrackSuccess,
    error: [...commonErrors, ...bodyErrors, ErrorDocs.conflict, ErrorDocs.unavailable]
  })

export class TrackApi extends HttpApiGroup.make("track", { topLevel: true })
  .add(
    trackEndpoint("track", "/v1/track"),
    trackEndpoint("trackAlias", "/events/track")
  )
  .middleware(PublicKeyAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Tracking",
    description: "Record an event for a contact (public key only). The contact is created when missing."
  }))
{}
