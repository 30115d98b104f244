import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { isReservedEventName } from "../../domain/events.ts"
import { bodyErrors, commonErrors, ErrorDocs } from "./errors.ts"
import { isRecord } from "./openApiDocument.ts"
import { Count, CustomData, Email, IdempotencyHeaders, Text, Timestamp } from "./schemas.ts"
import { PublicKeyAuth } from "./security.ts"

/** An event name's shape beyond Text: 1 to 255 characters, not blank, no control characters. */
export const isEventNameShape = (value: string): boolean => value.trim().length > 0 && value.length <= 255 && !/[\x00-\x1f]/.test(value)

export const EventName = Text.check(
  Schema.makeFilter(isEventNameShape, {
    expected: "an event name of 1 to 255 characters, without control characters",
    code: "invalid_string"
  } as Schema.Annotations.Filter),
  Schema.makeFilter((value: string) => !isReservedEventName(value), {
    expected: "an event name that is not reserved (email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry|exit)",
    code: "reserved_event"
  } as Schema.Annotations.Filter)
)

/** The body of /v1/track, and each event of /v1/track/batch (decoded one by one there: see TrackBatchEvent). */
export const TrackBody = Schema.Struct({
  email: Email,
  event: EventName,
  subscribed: Schema.optional(Schema.Boolean),
  preserveExistingSubscription: Schema.optional(Schema.Boolean).annotate({
    description: "true: `subscribed` applies only when this request creates the contact; an existing contact keeps its state " +
      "(for one-call double opt-in with subscribed: false)"
  }),
  data: Schema.optional(CustomData)
}).annotate({ identifier: "TrackEvent" })

const TrackSuccess = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({ contact: Schema.String, event: Schema.String, timestamp: Timestamp })
})

const trackEndpoint = <const Name extends string, const Path extends `/${string}`>(name: Name, path: Path) =>
  HttpApiEndpoint.post(name, path, {
    payload: TrackBody,
    headers: IdempotencyHeaders,
    success: TrackSuccess,
    error: [...commonErrors, ...bodyErrors, ErrorDocs.conflict]
  })

/** Events one /v1/track/batch request carries at most. */
export const MAX_BATCH_EVENTS = 500

/**
 * One event of a batch: any value here, so that one bad event is reported by its index instead of
 * refusing the whole batch; the handler decodes each with TrackBody (the rules of /v1/track), and the
 * OpenAPI document types it as TrackBody (`withBatchEventsTyped`).
 */
export const TrackBatchEvent = Schema.Unknown

/** Types `events[]` of the batch's request body as the /v1/track body (the TrackEvent component). */
const withBatchEventsTyped = (operation: Record<string, unknown>): Record<string, unknown> => {
  const events = ["requestBody", "content", "application/json", "schema", "properties", "events"].reduce<unknown>(
    (node, key) => (isRecord(node) ? node[key] : undefined),
    operation
  )
  if (!isRecord(events)) throw new Error("POST /v1/track/batch: no events[] in the request body to type")
  events.items = { $ref: "#/components/schemas/TrackEvent" }
  return operation
}

const TrackBatchBody = Schema.Struct({
  events: Schema.Array(TrackBatchEvent).check(
    Schema.isMinLength(1, { expected: "at least 1 event", code: "too_small" } as Schema.Annotations.Filter),
    Schema.isMaxLength(MAX_BATCH_EVENTS, { expected: `at most ${MAX_BATCH_EVENTS} events`, code: "too_big" } as Schema.Annotations.Filter)
  ).annotate({ description: `1 to ${MAX_BATCH_EVENTS} events, each a /v1/track body` })
})

const BatchFieldError = Schema.Struct({
  field: Schema.String.annotate({ description: "The field within the event (`email`, `data.plan`, ...)" }),
  message: Schema.String,
  code: Schema.String,
  received: Schema.optionalKey(Schema.Unknown)
})

const TrackBatchSuccess = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({
    accepted: Count.annotate({ description: "Events recorded (durable in the event stream when this answer is sent)" }),
    rejected: Schema.Array(Schema.Struct({
      index: Count.annotate({ description: "The event's position in `events` (0-based)" }),
      errors: Schema.Array(BatchFieldError)
    })).annotate({ description: "The events refused, with the same field errors /v1/track would answer; none of them was recorded" })
  })
})

const trackBatchEndpoint = HttpApiEndpoint.post("trackBatch", "/v1/track/batch", {
  payload: TrackBatchBody,
  headers: IdempotencyHeaders,
  success: TrackBatchSuccess,
  error: [...commonErrors, ...bodyErrors, ErrorDocs.conflict]
}).annotate(
  OpenApi.Description,
  `Records up to ${MAX_BATCH_EVENTS} events in one request (at most 1 MiB): the way to stream high volumes. Each event is ` +
    "validated on its own with the rules of /v1/track; valid events are recorded and invalid ones listed in " +
    "`rejected` with their index and field errors. The answer is 200 even when every event is rejected " +
    "(then `accepted` is 0); a body that is not `{ events: [...] }` with 1 to " + MAX_BATCH_EVENTS + " items is a 422. " +
    "The answer comes once every accepted event is durable in the event stream (503 if the stream is unavailable: " +
    "retry with the same Idempotency-Key). An Idempotency-Key covers the whole batch: a retry records no event twice. " +
    "The rate limit counts each accepted event as one request (a batch counts at least one)."
).annotate(OpenApi.Transform, withBatchEventsTyped)

export class TrackApi extends HttpApiGroup.make("track", { topLevel: true })
  .add(
    trackEndpoint("track", "/v1/track"),
    trackEndpoint("trackAlias", "/events/track"),
    trackBatchEndpoint
  )
  .middleware(PublicKeyAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Tracking",
    description: "Record events for contacts (public key only), one per request or up to " + MAX_BATCH_EVENTS +
      " per batch. A contact is created when missing."
  }))
{}
