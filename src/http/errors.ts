/**
 * The one place HTTP error bodies are produced: the spec's error envelope
 * `{ success:false, error:{ code, message, statusCode, requestId, errors?, details?, suggestion? }, timestamp }`
 * and the reference platform's flat `{ error }` 400 (its LegacyError) for a missing required field of
 * POST /contacts, /templates and /segments.
 *
 * Handlers and middleware fail with `ApiError` / `BareBadRequest`; both render themselves (they are
 * `Respondable`), so HttpApi turns them into responses wherever they are raised. The gateway
 * middleware uses the same functions for failures outside handlers (unknown routes, bad bodies,
 * defects).
 */
import { Context, Data, Effect, Schema } from "effect"
import { HttpServerRespondable, HttpServerResponse } from "effect/http"
import { HttpApiSchema } from "effect/http-api"

/**
 * Per-request state set up by the gateway: the request id (echoed in error bodies and `x-request-id`)
 * and headers that middleware wants on the final response whatever its status (rate-limit headers).
 */
export interface RequestStateShape {
  readonly requestId: string
  readonly headers: Record<string, string>
}

export const RequestState = Context.Reference<RequestStateShape>("app/http/RequestState", {
  defaultValue: () => ({ requestId: "unknown", headers: {} })
})

export interface FieldError {
  readonly field: string
  readonly message: string
  readonly code: string
  readonly received?: unknown
}

export interface EnvelopeFields {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly errors?: ReadonlyArray<FieldError> | undefined
  readonly details?: Record<string, unknown> | undefined
  readonly suggestion?: string | undefined
  readonly headers?: Record<string, string> | undefined
}

export const envelopeResponse = (fields: EnvelopeFields, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(
    {
      success: false,
      error: {
        code: fields.code,
        message: fields.message,
        statusCode: fields.status,
        requestId,
        ...(fields.errors ? { errors: fields.errors } : {}),
        ...(fields.details ? { details: fields.details } : {}),
        ...(fields.suggestion ? { suggestion: fields.suggestion } : {})
      },
      timestamp: new Date().toISOString()
    },
    { status: fields.status, headers: fields.headers }
  )

export class ApiError extends Data.TaggedError("ApiError")<EnvelopeFields> implements HttpServerRespondable.Respondable {
  [HttpServerRespondable.symbol]() {
    return Effect.map(Effect.service(RequestState), (state) => envelopeResponse(this, state.requestId))
  }

  static notFound(resource: string): ApiError {
    return new ApiError({ status: 404, code: "NOT_FOUND", message: `${resource} not found` })
  }

  static validation(errors: ReadonlyArray<FieldError>, message = "Request validation failed"): ApiError {
    return new ApiError({
      status: 422,
      code: "VALIDATION_ERROR",
      message,
      errors,
      suggestion: "Check the fields listed in errors and try again."
    })
  }

  static invalidField(field: string, message: string, code: string, received?: unknown): ApiError {
    return ApiError.validation([{ field, message, code, ...(received === undefined ? {} : { received }) }])
  }

  static badRequest(message: string, code = "BAD_REQUEST"): ApiError {
    return new ApiError({ status: 400, code, message })
  }

  static conflict(code: string, message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError({ status: 409, code, message, details })
  }

  static invalidApiKey(message: string): ApiError {
    return new ApiError({
      status: 401,
      code: "INVALID_API_KEY",
      message,
      suggestion: "Send `Authorization: Bearer <key>`: the public key (pk_) on /v1/track only, the secret key (sk_) everywhere else."
    })
  }

  /** The spec's answer to a sender domain the project has not verified (403, code as the reference returns it). */
  static unverifiedDomain(domain: string): ApiError {
    return new ApiError({
      status: 403,
      code: "INTERNAL_SERVER_ERROR",
      message: `The domain ${domain} is not verified for this project`,
      suggestion: "Add the domain with POST /domains, publish its DNS records and verify it with GET /domains/:id/verify."
    })
  }

  /** A write that would grow a contact's custom data past the limit (see MAX_CONTACT_DATA_BYTES). */
  static contactDataTooLarge(limitBytes: number): ApiError {
    return new ApiError({
      status: 422,
      code: "VALIDATION_ERROR",
      message: `A contact holds at most ${limitBytes / 1024} KiB of custom data; this change would exceed it`,
      errors: [{ field: "data", message: `at most ${limitBytes / 1024} KiB of data per contact`, code: "data_too_large" }],
      details: { limitBytes },
      suggestion: "Delete keys you no longer need (send them as null) or store large values elsewhere."
    })
  }

  static internal(): ApiError {
    return new ApiError({ status: 500, code: "INTERNAL_SERVER_ERROR", message: "An unexpected error occurred" })
  }
}

/** The flat `{ error }` 400 (the reference's LegacyError): a missing required field of POST /contacts, /templates, /segments only. */
export class BareBadRequest extends Data.TaggedError("BareBadRequest")<{ readonly message: string }>
  implements HttpServerRespondable.Respondable
{
  [HttpServerRespondable.symbol]() {
    return Effect.succeed(HttpServerResponse.jsonUnsafe({ error: this.message }, { status: 400 }))
  }
}

// ---- OpenAPI descriptions of the same bodies (documentation; rendering happens above) ----

const FieldErrorSchema = Schema.Struct({
  field: Schema.String,
  message: Schema.String,
  code: Schema.String,
  received: Schema.optionalKey(Schema.Unknown)
}).annotate({ identifier: "FieldError" })

const envelopeSchema = (status: number, description: string) =>
  Schema.Struct({
    success: Schema.Literal(false),
    error: Schema.Struct({
      code: Schema.String,
      message: Schema.String,
      statusCode: Schema.Literal(status),
      requestId: Schema.String,
      errors: Schema.optionalKey(Schema.Array(FieldErrorSchema)),
      details: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
      suggestion: Schema.optionalKey(Schema.String)
    }),
    timestamp: Schema.String.annotate({ format: "date-time" } as Schema.Annotations.Documentation<string>)
  }).annotate({ identifier: `Error${status}`, description }).pipe(HttpApiSchema.status(status))

/** The bodies error responses can have, per status; the descriptions name the codes. */
export const ErrorDocs = {
  badRequest: envelopeSchema(
    400,
    "Envelope: INVALID_JSON (the body is not JSON), BAD_REQUEST (the body could not be read, or a value the endpoint " +
      "documents as a 400), INVALID_CURSOR (a cursor this list did not return), INVALID_IDEMPOTENCY_KEY"
  ),
  unauthorized: envelopeSchema(
    401,
    "INVALID_API_KEY: missing or unknown key, or the wrong key type (pk_ only on /v1/track, sk_ everywhere else); " +
      "UNAUTHENTICATED: no valid session cookie; INVALID_CREDENTIALS: wrong email or password"
  ),
  forbidden: envelopeSchema(
    403,
    "PROJECT_DISABLED; BILLING_LIMIT_EXCEEDED (a monthly cap, on sends); with the session cookie: FORBIDDEN (the role " +
      "does not allow it), CSRF_REJECTED (a state change from another origin), EMAIL_VERIFICATION_REQUIRED; " +
      "SIGNUPS_DISABLED; on templates, campaigns and sends also a sender domain not verified for the project " +
      "(code INTERNAL_SERVER_ERROR, as the reference platform returns it)"
  ),
  notFound: envelopeSchema(
    404,
    "NOT_FOUND: the resource does not exist in the key's project (or a path segment is not valid percent-encoded UTF-8, which matches no route)"
  ),
  conflict: envelopeSchema(409, "Conflict with the resource's state (duplicate email, reused Idempotency-Key, active executions, ...)"),
  payloadTooLarge: envelopeSchema(413, "PAYLOAD_TOO_LARGE: the body is over the endpoint's limit"),
  unsupportedMediaType: envelopeSchema(415, "UNSUPPORTED_MEDIA_TYPE: send the body as application/json"),
  validation: envelopeSchema(422, "VALIDATION_ERROR: errors[] names every invalid field (body, path parameter, query string or header)"),
  rateLimited: envelopeSchema(429, "RATE_LIMITED: too many requests for this project; see Retry-After"),
  internal: envelopeSchema(500, "INTERNAL_SERVER_ERROR: an unexpected failure (logged with the requestId)"),
  unavailable: envelopeSchema(503, "SERVICE_UNAVAILABLE: the event stream did not accept the message; retry with backoff"),
  /** The reference platform's flat 400 for a missing required field of POST /contacts, /templates and /segments. */
  legacy: Schema.Struct({ error: Schema.String }).annotate({
    identifier: "LegacyError",
    description: "LegacyError `{ error }`: a required field is missing (POST /contacts, POST /templates, POST /segments only)"
  }).pipe(HttpApiSchema.status(400))
} as const

/** Every endpoint can fail unexpectedly. */
export const serverErrors = [ErrorDocs.internal] as const

/** What every endpoint behind an API key can answer: the key check, a disabled project, the rate limit. */
export const commonErrors = [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ...serverErrors] as const

/** What a JSON body adds: malformed JSON, over the size limit, not JSON at all, invalid fields. */
export const bodyErrors = [ErrorDocs.badRequest, ErrorDocs.payloadTooLarge, ErrorDocs.unsupportedMediaType, ErrorDocs.validation] as const

/** Path parameters and query strings are checked too (no NUL, no lone surrogates): 422 naming them. */
export const inputErrors = [ErrorDocs.validation] as const

/**
 * HttpApi types a handler's failures as the endpoint's declared error schemas. Ours are documentation
 * of the envelope, while the failures themselves are `ApiError` / `BareBadRequest`, which HttpApi
 * renders through `Respondable` when no declared schema encodes them. This marks that boundary.
 */
export const rendered = <A, R>(
  effect: Effect.Effect<A, ApiError | BareBadRequest, R>
): Effect.Effect<A, never, R> => effect as Effect.Effect<A, never, R>

