/**
 * Event destinations: endpoints of the project's own systems that receive the events the service emits
 * (stream OUT), signed per Standard Webhooks, with a delivery log, replay, test events and secret
 * rotation. Delivery plumbing holding a secret: the `manage` permission (ADMIN, OWNER).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DEFAULT_OVERLAP_SECONDS,
  MAX_DESCRIPTION_LENGTH,
  MAX_OVERLAP_SECONDS,
  MAX_PATTERNS,
  patternProblem,
  TEST_EVENT_TYPE,
  urlProblem
} from "../../domain/destinations.ts"
import { InvalidCursor } from "../../domain/errors.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

export const DeliveryStatuses = ["pending", "succeeded", "failed", "parked"] as const

const DestinationUrl = Text.check(
  Schema.makeFilter((value: string) => urlProblem(value) === undefined, {
    expected: "an absolute http(s) URL without credentials, at most 2048 characters",
    code: "invalid_url"
  } as Schema.Annotations.Filter)
).annotate({ format: "uri", description: "Where deliveries are POSTed (https recommended)" } as Schema.Annotations.Documentation<string>)

const EventPattern = Text.check(
  Schema.makeFilter((value: string) => patternProblem(value) === undefined, {
    expected: "an event name or pattern: dot-separated tokens, each `*` or letters, digits and _ : @ $ - (at most 200 characters)",
    code: "invalid_pattern"
  } as Schema.Annotations.Filter)
)

const EventPatterns = Schema.Array(EventPattern).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_PATTERNS)).annotate({
  description: "Event types delivered, 1 to 50 patterns: `*` matches one token (`segment.*.entry`), a final `*` one or " +
    "more (`email.*`, `contact.*`), `*` alone everything; other names literally (`segment.vip.exit`, a tracked event name)"
})

const Description = Text.check(Schema.isMaxLength(MAX_DESCRIPTION_LENGTH))

export const DestinationStats = Schema.Struct({
  pending: Count.annotate({ description: "Deliveries waiting for their first or next attempt (failed ones retrying included)" }),
  succeeded: Count,
  failed: Count.annotate({ description: "Deliveries whose last attempt failed and that will be retried" }),
  parked: Count.annotate({ description: "Deliveries given up on (retried past DESTINATION_RETRY_HOURS, or refused by the SSRF guard)" }),
  lastSuccessAt: Schema.NullOr(Timestamp),
  lastFailureAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "DestinationStats" })

const DestinationFields = {
  id: Schema.String,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.String),
  enabled: Schema.Boolean.annotate({
    description: "false: no deliveries are made (new events are not recorded for it); set by PATCH, or automatically after " +
      "DESTINATION_DISABLE_AFTER_FAILURES failed attempts in a row (then disabledReason says so)"
  }),
  disabledAt: Schema.NullOr(Timestamp),
  disabledReason: Schema.NullOr(Schema.String).annotate({
    description: "Why it is disabled: `manual`, or `failures` (disabled automatically: show it to the owner)"
  }),
  consecutiveFailures: Count.annotate({ description: "Failed attempts since the last success" }),
  secretRotatedAt: Schema.NullOr(Timestamp),
  previousSecretExpiresAt: Schema.NullOr(Timestamp).annotate({
    description: "Until then deliveries carry a signature with the previous secret too (after a rotation)"
  }),
  stats: DestinationStats,
  createdAt: Timestamp,
  updatedAt: Timestamp
}

export const Destination = Schema.Struct(DestinationFields).annotate({ identifier: "Destination" })

export const DestinationWithSecret = Schema.Struct({
  ...DestinationFields,
  secret: Schema.String.annotate({ description: "The signing secret (`whsec_` + base64), shown only on create and rotate" })
}).annotate({ identifier: "DestinationWithSecret" })

export const Delivery = Schema.Struct({
  id: Schema.String.annotate({ description: "The `webhook-id` header of every attempt (and replay) of this delivery" }),
  destinationId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  contactId: Schema.NullOr(Schema.String),
  status: Schema.Literals(DeliveryStatuses).annotate({
    description: "pending: waiting for an attempt (or behind an earlier delivery to the same contact); succeeded: a 2xx; " +
      "failed: the last attempt failed, retried at nextAttemptAt; parked: given up"
  }),
  attempts: Count,
  lastStatusCode: Schema.NullOr(Schema.Int),
  latencyMs: Schema.NullOr(Count).annotate({
    description: "From the event's emission to its successful delivery (test events: the request's duration)"
  }),
  responseExcerpt: Schema.NullOr(Schema.String).annotate({ description: "The start of the last response's body (at most 500 characters)" }),
  error: Schema.NullOr(Schema.String),
  nextAttemptAt: Schema.NullOr(Timestamp),
  replays: Count,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "DestinationDelivery" })

const IdParam = { id: Text }
const DeliveryParams = { id: Text, deliveryId: Text }
const Deleted = Schema.Struct({ success: Schema.Literal(true) })

const DeliveryQuery = queryParameters({
  ...cursorParams,
  status: QueryParam.literals(DeliveryStatuses, "Only deliveries in this status (an unrecognised value lists every status)")
})

export const CreateDestination = Schema.Struct({
  url: DestinationUrl,
  events: EventPatterns,
  description: Schema.optional(Schema.NullOr(Description)),
  enabled: Schema.optional(Schema.Boolean)
}).annotate({ identifier: "CreateDestination" })

export const UpdateDestination = Schema.Struct({
  url: Schema.optional(DestinationUrl),
  events: Schema.optional(EventPatterns),
  description: Schema.optional(Schema.NullOr(Description)),
  enabled: Schema.optional(Schema.Boolean).annotate({
    description: "true re-enables a disabled destination (also one disabled after failures) and resets its failure run"
  })
}).annotate({ identifier: "UpdateDestination" })

export const RotateSecret = Schema.Struct({
  overlapSeconds: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_OVERLAP_SECONDS }))).annotate({
    description:
      `How long the previous secret keeps signing too (default ${DEFAULT_OVERLAP_SECONDS}, at most ${MAX_OVERLAP_SECONDS}; 0 ends it now)`
  })
}).annotate({ identifier: "RotateDestinationSecret" })

export const ReplayRange = Schema.Struct({
  from: Text.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}T/)).annotate({ format: "date-time" } as Schema.Annotations.Documentation<string>),
  to: Text.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}T/)).annotate({ format: "date-time" } as Schema.Annotations.Documentation<string>)
}).annotate({ identifier: "ReplayDestinationRange" })

export class DestinationsApi extends HttpApiGroup.make("destinations")
  .add(
    HttpApiEndpoint.post("create", "/destinations", {
      payload: CreateDestination,
      success: DestinationWithSecret.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors]
    }).annotate(OpenApi.Description, "Registers an endpoint for the events matching `events`; the answer carries its signing secret."),
    HttpApiEndpoint.get("list", "/destinations", {
      success: Schema.Struct({ data: Schema.Array(Destination) }),
      error: [...commonErrors]
    }).annotate(OpenApi.Description, "The project's destinations, oldest first, with their delivery counts."),
    HttpApiEndpoint.get("get", "/destinations/:id", {
      params: IdParam,
      success: Destination,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.patch("update", "/destinations/:id", {
      params: IdParam,
      payload: UpdateDestination,
      success: Destination,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Changes the fields given. New patterns apply to events emitted from then on."),
    HttpApiEndpoint.delete("delete", "/destinations/:id", {
      params: IdParam,
      success: Deleted,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Deletes the destination and its delivery log; deliveries not made yet are dropped."),
    HttpApiEndpoint.post("rotateSecret", "/destinations/:id/rotate-secret", {
      params: IdParam,
      payload: RotateSecret,
      success: DestinationWithSecret,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Makes a new signing secret. Until previousSecretExpiresAt every delivery carries two signatures in " +
        "`webhook-signature` (space-separated, the new secret's first), so the receiver can switch over at its own pace."
    ),
    HttpApiEndpoint.post("test", "/destinations/:id/test", {
      params: IdParam,
      success: Delivery,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      `Sends a synthetic \`${TEST_EVENT_TYPE}\` event now (also to a disabled destination), once, and answers its delivery ` +
        "with the outcome (status, lastStatusCode, latencyMs, responseExcerpt); it is kept in the delivery log, not retried."
    ),
    HttpApiEndpoint.get("deliveries", "/destinations/:id/deliveries", {
      params: IdParam,
      query: DeliveryQuery.fields,
      success: Schema.Struct({ data: Schema.Array(Delivery), cursor: Schema.NullOr(Schema.String), hasMore: Schema.Boolean }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "The destination's delivery log, newest first.")
      .annotate(OpenApi.Transform, DeliveryQuery.document),
    HttpApiEndpoint.post("replayDelivery", "/destinations/:id/deliveries/:deliveryId/replay", {
      params: DeliveryParams,
      success: Delivery.pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Sends the delivery again (same `webhook-id`, same body), whatever its status: it goes back to pending with a new " +
        "retry period, behind any earlier delivery to the same contact still pending."
    ),
    HttpApiEndpoint.post("replayRange", "/destinations/:id/replay", {
      params: IdParam,
      payload: ReplayRange,
      success: Schema.Struct({ replayed: Count }).pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Sends again every delivery of this destination whose event was emitted in [from, to) (at most 31 days), in their " +
        "order, each with its own `webhook-id`; answers how many."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Destinations",
    description: "Event destinations: your endpoints receiving the events the service emits, signed per Standard Webhooks (secret key)"
  }))
{}
