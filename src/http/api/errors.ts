/**
 * The error bodies the API answers, as codecs of the error classes: declared on the endpoints and the
 * middleware (so /openapi.json lists them), used by HttpApi to encode a handler's or middleware's failure,
 * and decoded by clients (the web app) back into the error. One codec, `envelopeCodec`, serves the status
 * errors (./statusErrors.ts, `ErrorDocs`) and the domain errors (src/domain/errors.ts, `declared`); one
 * body builder, `envelopeBody`, is shared with the answers written outside HttpApi (../errors.ts).
 */
import { Context, Effect, Schema, SchemaGetter } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { type DomainErrorClass, FieldErrorSchema } from "../../domain/errors.ts"
import {
  BadGateway,
  BadRequest,
  Conflict,
  Forbidden,
  InternalError,
  LegacyError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
  UnsupportedMediaType,
  ValidationFailed
} from "./statusErrors.ts"

export { FieldErrorSchema }

/**
 * Per-request state set up by the gateway: the request id (echoed in error bodies and `x-request-id`)
 * and headers that middleware wants on the final response whatever its status (rate-limit headers).
 * It lives beside the envelope because encoding a declared error reads the request id from it.
 */
export interface RequestStateShape {
  readonly requestId: string
  readonly headers: Record<string, string>
}

export const RequestState = Context.Reference<RequestStateShape>("app/http/RequestState", {
  defaultValue: () => ({ requestId: "unknown", headers: {} })
})

/** The envelope's fields other than the request id and the time. */
export interface EnvelopeFields {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly errors?: ReadonlyArray<typeof FieldErrorSchema.Type> | undefined
  readonly details?: Record<string, unknown> | undefined
  readonly suggestion?: string | undefined
}

/** The spec's error envelope, the one shape every error body but the flat legacy 400 has. */
export const envelopeBody = (fields: EnvelopeFields, requestId: string, now: Date) => ({
  success: false as const,
  error: {
    code: fields.code,
    message: fields.message,
    statusCode: fields.status,
    requestId,
    ...(fields.errors ? { errors: fields.errors } : {}),
    ...(fields.details ? { details: fields.details } : {}),
    ...(fields.suggestion ? { suggestion: fields.suggestion } : {})
  },
  timestamp: now.toISOString()
})

const envelopeFields = <S extends Schema.Top, C extends Schema.Top = typeof Schema.String>(statusCode: S, code?: C) => ({
  success: Schema.Literal(false),
  error: Schema.Struct({
    code: (code ?? Schema.String) as C,
    message: Schema.String,
    statusCode,
    requestId: Schema.String,
    errors: Schema.optionalKey(Schema.Array(FieldErrorSchema)),
    details: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
    suggestion: Schema.optionalKey(Schema.String)
  }),
  timestamp: Schema.String.annotate({ format: "date-time" } as Schema.Annotations.Documentation<string>)
})

/** The encoded side of an error the envelope carries: a domain error's fields, or a status error's (with its code). */
interface EnvelopedFields {
  readonly _tag: string
  readonly code?: string
  readonly message: string
  readonly errors?: ReadonlyArray<typeof FieldErrorSchema.Encoded>
  readonly details?: { readonly [x: string]: unknown }
  readonly suggestion?: string
  readonly headers?: { readonly [x: string]: string }
}

type EnvelopedClass = Schema.Codec<{ readonly _tag: string }, EnvelopedFields>

/**
 * The one envelope codec: in /openapi.json the envelope of `status` (its `code` a literal when the class
 * has one code), at run time the encoding of a handler's or middleware's failure into that envelope with
 * the request id (its `headers`, Retry-After or Allow, put on the response through RequestState), and
 * for a client the decoding of the envelope back into the error.
 */
const envelopeCodec = <E extends EnvelopedClass>(
  error: E,
  options: {
    readonly tag: string
    readonly status: number
    readonly code?: string
    readonly identifier: string
    readonly description: string
  }
) => {
  const { code, status, tag } = options
  const envelope = Schema.Struct(envelopeFields(Schema.Literal(status), code === undefined ? Schema.String : Schema.Literal(code)))
    .annotate({
      identifier: options.identifier,
      description: options.description
    })
  return envelope.pipe(
    Schema.decodeTo(error, {
      decode: SchemaGetter.transform((envelope) => ({
        _tag: tag,
        ...(code === undefined ? { code: envelope.error.code, requestId: envelope.error.requestId } : {}),
        message: envelope.error.message,
        ...(envelope.error.errors ? { errors: envelope.error.errors } : {}),
        ...(envelope.error.details ? { details: envelope.error.details } : {}),
        ...(envelope.error.suggestion ? { suggestion: envelope.error.suggestion } : {})
      })),
      encode: SchemaGetter.transformEffect((fields) =>
        Effect.map(Effect.service(RequestState), (state) => {
          if (fields.headers) Object.assign(state.headers, fields.headers)
          const body = envelopeBody({ ...fields, status, code: code ?? fields.code ?? "" }, state.requestId, new Date())
          // Through JSON once, as the body goes out: a field error's `received` or a detail that is undefined
          // (or NaN, or a Date) is what JSON.stringify makes of it, where the body schema would refuse it.
          return JSON.parse(JSON.stringify(body)) as typeof envelope.Type
        })
      )
    }),
    HttpApiSchema.status(status)
  )
}

/** Declares a status error class (./statusErrors.ts): the envelope of its status, whatever its code. */
const answered = <E extends EnvelopedClass & { readonly status: number; readonly identifier: string }>(error: E, description: string) =>
  envelopeCodec(error, { tag: error.identifier, status: error.status, identifier: `Error${error.status}`, description })

/** Declares a domain error (src/domain/errors.ts) on an endpoint: the envelope of its status with its code. */
export const declared = <E extends DomainErrorClass & EnvelopedClass>(error: E) =>
  envelopeCodec(error, {
    tag: error.tag,
    status: error.status,
    code: error.code,
    identifier: error.tag,
    description: `${error.code}: ${error.tag}`
  })

/** The envelope whatever its status: what a client reads from a status an endpoint does not declare. */
export const ErrorEnvelope = Schema.Struct(envelopeFields(Schema.Number))
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** The bodies error responses can have, per status, each the codec of its class; the descriptions name the codes. */
export const ErrorDocs = {
  badRequest: answered(
    BadRequest,
    "Envelope: INVALID_JSON (the body is not JSON), BAD_REQUEST (the body could not be read, or a value the endpoint " +
      "documents as a 400), INVALID_CURSOR (a cursor this list did not return), INVALID_IDEMPOTENCY_KEY"
  ),
  unauthorized: answered(
    Unauthorized,
    "INVALID_API_KEY: missing or unknown key, or the wrong key type (pk_ only on /v1/track, sk_ everywhere else); " +
      "UNAUTHENTICATED: no valid session cookie; INVALID_CREDENTIALS: wrong email or password; INVALID_METRICS_TOKEN: " +
      "/metrics without the METRICS_TOKEN bearer token"
  ),
  forbidden: answered(
    Forbidden,
    "PROJECT_DISABLED; BILLING_LIMIT_EXCEEDED (a monthly cap, on sends); with the session cookie: FORBIDDEN (the role " +
      "does not allow it), CSRF_REJECTED (a state change from another origin), EMAIL_VERIFICATION_REQUIRED; " +
      "SIGNUPS_DISABLED; METRICS_NOT_PUBLIC (/metrics from a proxy or a public address, without METRICS_TOKEN); " +
      "on templates, campaigns and sends also a sender domain not verified for the project " +
      "(code INTERNAL_SERVER_ERROR, as the reference platform returns it)"
  ),
  notFound: answered(
    NotFound,
    "NOT_FOUND: the resource does not exist in the key's project (or a path segment is not valid percent-encoded UTF-8, which matches no route)"
  ),
  methodNotAllowed: answered(MethodNotAllowed, "METHOD_NOT_ALLOWED: use the method the Allow header names"),
  conflict: answered(Conflict, "Conflict with the resource's state (duplicate email, reused Idempotency-Key, active executions, ...)"),
  payloadTooLarge: answered(PayloadTooLarge, "PAYLOAD_TOO_LARGE: the body is over the endpoint's limit"),
  unsupportedMediaType: answered(UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE: send the body as application/json"),
  validation: answered(
    ValidationFailed,
    "VALIDATION_ERROR: errors[] names every invalid field (body, path parameter, query string or header)"
  ),
  rateLimited: answered(RateLimited, "RATE_LIMIT_EXCEEDED: too many requests for this project; see Retry-After"),
  internal: answered(InternalError, "INTERNAL_SERVER_ERROR: an unexpected failure (logged with the requestId)"),
  badGateway: answered(BadGateway, "A provider this request needs (Stripe, an OAuth provider) did not answer as expected"),
  unavailable: answered(
    ServiceUnavailable,
    "SERVICE_UNAVAILABLE: a dependency (Postgres, the event stream) is unreachable, or the server is starting or stopping; " +
      "retry after Retry-After (with the same Idempotency-Key, if you sent one)"
  ),
  /** The reference platform's flat 400 for a missing required field of POST /contacts, /templates and /segments. */
  legacy: Schema.Struct({ error: Schema.String }).annotate({
    identifier: "LegacyError",
    description: "LegacyError `{ error }`: a required field is missing (POST /contacts, POST /templates, POST /segments only)"
  }).pipe(
    Schema.decodeTo(LegacyError, {
      decode: SchemaGetter.transform((body) => ({ _tag: "LegacyError" as const, message: body.error })),
      encode: SchemaGetter.transform((fields) => ({ error: fields.message }))
    }),
    HttpApiSchema.status(400)
  )
} as const

/** Every endpoint can fail unexpectedly, or find a dependency it needs unreachable. */
export const serverErrors = [ErrorDocs.internal, ErrorDocs.unavailable] as const

/** What every endpoint behind an API key can answer: the key check, a disabled project, the rate limit. */
export const commonErrors = [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ...serverErrors] as const

/** What a JSON body adds: malformed JSON, over the size limit, not JSON at all, invalid fields. */
export const bodyErrors = [ErrorDocs.badRequest, ErrorDocs.payloadTooLarge, ErrorDocs.unsupportedMediaType, ErrorDocs.validation] as const

/** Path parameters and query strings are checked too (no NUL, no lone surrogates): 422 naming them. */
export const inputErrors = [ErrorDocs.validation] as const
