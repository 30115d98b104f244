/**
 * The API's failures other than the named domain errors (src/domain/errors.ts), one `Schema.TaggedError`
 * per HTTP status. Each carries the envelope's fields, its `code` among them (NOT_FOUND, EMAIL_TAKEN, ...),
 * so one class answers every case of its status. Endpoints and middleware declare the classes they can
 * fail with (errors.ts, `ErrorDocs`), /openapi.json lists them, and errors.ts encodes them into the
 * envelope; nothing renders itself.
 */
import { Schema } from "effect"
import { FieldErrorSchema } from "../../domain/errors.ts"

/**
 * The envelope's fields other than status and time; `headers` goes on the response beside it (Retry-After,
 * Allow) and is not part of the body. `requestId` is what a client decoded from the envelope; the server
 * always writes the request's own.
 */
export const statusErrorFields = {
  code: Schema.String,
  message: Schema.String,
  // `optional`, not `optionalKey`: a field given as undefined is left out, as JSON.stringify leaves it.
  errors: Schema.optional(Schema.Array(FieldErrorSchema)),
  details: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  suggestion: Schema.optional(Schema.String),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  requestId: Schema.optional(Schema.String)
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", statusErrorFields) {
  static readonly status = 400
  static readonly of = (message: string, code = "BAD_REQUEST") => new BadRequest({ code, message })
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", statusErrorFields) {
  static readonly status = 401
  static readonly invalidApiKey = (message: string) =>
    new Unauthorized({
      code: "INVALID_API_KEY",
      message,
      suggestion: "Send `Authorization: Bearer <key>`: the public key (pk_) on /v1/track only, the secret key (sk_) everywhere else."
    })
}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", statusErrorFields) {
  static readonly status = 403
  /** The spec's answer to a sender domain the project has not verified (403, code as the reference returns it). */
  static readonly unverifiedDomain = (domain: string) =>
    new Forbidden({
      code: "INTERNAL_SERVER_ERROR",
      message: `The domain ${domain} is not verified for this project`,
      // Named apart from the message, so a client (the dashboard) can point at that domain.
      details: { domain },
      suggestion: "Add the domain with POST /domains, publish its DNS records and verify it with GET /domains/:id/verify."
    })
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", statusErrorFields) {
  static readonly status = 404
  static readonly of = (resource: string) => new NotFound({ code: "NOT_FOUND", message: `${resource} not found` })
}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", statusErrorFields) {
  static readonly status = 405
}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", statusErrorFields) {
  static readonly status = 409
  static readonly of = (code: string, message: string, details?: Record<string, unknown>) =>
    new Conflict({ code, message, ...(details ? { details } : {}) })
}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", statusErrorFields) {
  static readonly status = 413
  static readonly of = (message: string, details?: Record<string, unknown>) =>
    new PayloadTooLarge({ code: "PAYLOAD_TOO_LARGE", message, ...(details ? { details } : {}) })
}

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", statusErrorFields) {
  static readonly status = 415
}

type FieldError = typeof FieldErrorSchema.Type

export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", statusErrorFields) {
  static readonly status = 422
  static readonly of = (errors: ReadonlyArray<FieldError>, message = "Request validation failed") =>
    new ValidationFailed({
      code: "VALIDATION_ERROR",
      message,
      errors,
      suggestion: "Check the fields listed in errors and try again."
    })
  static readonly field = (field: string, message: string, code: string, received?: unknown) =>
    ValidationFailed.of([{ field, message, code, ...(received === undefined ? {} : { received }) }])
  /** A write that would grow a contact's custom data past the limit (see MAX_CONTACT_DATA_BYTES). */
  static readonly contactDataTooLarge = (limitBytes: number) =>
    new ValidationFailed({
      code: "VALIDATION_ERROR",
      message: `A contact holds at most ${limitBytes / 1024} KiB of custom data; this change would exceed it`,
      errors: [{ field: "data", message: `at most ${limitBytes / 1024} KiB of data per contact`, code: "data_too_large" }],
      details: { limitBytes },
      suggestion: "Delete keys you no longer need (send them as null) or store large values elsewhere."
    })
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", statusErrorFields) {
  static readonly status = 429
}

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", statusErrorFields) {
  static readonly status = 500
}

export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", statusErrorFields) {
  static readonly status = 502
}

/**
 * 503 SERVICE_UNAVAILABLE: the request was not performed because this process cannot serve it right now
 * (it is starting or stopping, or a dependency it needs is unreachable); retrying is safe and should
 * succeed soon. Always with Retry-After.
 */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", statusErrorFields) {
  static readonly status = 503
  static readonly of = (
    message: string,
    suggestion = "Retry after the number of seconds in Retry-After (with the same Idempotency-Key, if you use one).",
    retryAfterSeconds = 1
  ) => new ServiceUnavailable({ code: "SERVICE_UNAVAILABLE", message, suggestion, headers: { "retry-after": String(retryAfterSeconds) } })
  /** Postgres unreachable (src/lib/isolation.ts `isUnreachable`): the client retries, as after any 503. */
  static readonly database = () => ServiceUnavailable.of("The database is unavailable; retry shortly")
}

/** Every class above, each with the status it answers. */
export const StatusErrors = [
  BadRequest,
  Unauthorized,
  Forbidden,
  NotFound,
  MethodNotAllowed,
  Conflict,
  PayloadTooLarge,
  UnsupportedMediaType,
  ValidationFailed,
  RateLimited,
  InternalError,
  BadGateway,
  ServiceUnavailable
] as const

export type StatusError = InstanceType<(typeof StatusErrors)[number]>

/** The status a status error answers with, or undefined for anything else. */
export const statusOf = (error: unknown): number | undefined => StatusErrors.find((errorClass) => error instanceof errorClass)?.status

export const isStatusError = (value: unknown): value is StatusError => statusOf(value) !== undefined

/**
 * The flat `{ error }` 400 (the reference platform's LegacyError): a missing required field of POST
 * /contacts, /templates and /segments only.
 */
export class LegacyError extends Schema.TaggedError<LegacyError>()("LegacyError", { message: Schema.String }) {
  static readonly status = 400
}
