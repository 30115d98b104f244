/**
 * The one place HTTP error bodies are produced: the spec's error envelope
 * `{ success:false, error:{ code, message, statusCode, requestId, errors?, details?, suggestion? }, timestamp }`
 * and the reference platform's flat `{ error }` 400 (its LegacyError) for a missing required field of
 * POST /contacts, /templates and /segments.
 *
 * Handlers and middleware fail with `ApiError` / `BareBadRequest`; both render themselves (they are
 * `Respondable`), so HttpApi turns them into responses wherever they are raised. The gateway
 * middleware uses the same functions for failures outside handlers (unknown routes, bad bodies,
 * defects). What these bodies look like to clients (their schemas, declared on the endpoints) is in
 * api/errors.ts, the contract's side.
 */
import { Data, Effect } from "effect"
import { HttpServerRespondable, HttpServerResponse } from "effect/http"
import type { SqlError } from "effect/sql"
import { isUnreachable } from "../lib/isolation.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import { envelopeBody, type EnvelopeFields as BodyFields, type FieldErrorSchema, RequestState } from "./api/errors.ts"

export { RequestState, type RequestStateShape } from "./api/errors.ts"

/** One invalid field of a request, as the envelope's `errors[]` lists it (its schema is the domain's). */
export type FieldError = typeof FieldErrorSchema.Type

export interface EnvelopeFields extends BodyFields {
  readonly headers?: Record<string, string> | undefined
}

export const envelopeResponse = (fields: EnvelopeFields, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(envelopeBody(fields, requestId, new Date()), { status: fields.status, headers: fields.headers })

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
      // Named apart from the message, so a client (the dashboard) can point at that domain.
      details: { domain },
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

/**
 * 503 SERVICE_UNAVAILABLE: the request was not performed because this process cannot serve it right now
 * (it is starting or stopping, or a dependency it needs is unreachable); retrying is safe and should
 * succeed soon. Always with Retry-After.
 */
export const serviceUnavailable = (message: string, retryAfterSeconds = 1): EnvelopeFields => ({
  status: 503,
  code: "SERVICE_UNAVAILABLE",
  message,
  suggestion: "Retry after the number of seconds in Retry-After (with the same Idempotency-Key, if you use one).",
  headers: { "retry-after": String(retryAfterSeconds) }
})

/** Postgres unreachable (src/lib/isolation.ts `isUnreachable`): the client retries, as after any 503. */
export const databaseUnavailable: EnvelopeFields = serviceUnavailable("The database is unavailable; retry shortly")

/** The flat `{ error }` 400 (the reference's LegacyError): a missing required field of POST /contacts, /templates, /segments only. */
export class BareBadRequest extends Data.TaggedError("BareBadRequest")<{ readonly message: string }>
  implements HttpServerRespondable.Respondable
{
  [HttpServerRespondable.symbol]() {
    return Effect.succeed(HttpServerResponse.jsonUnsafe({ error: this.message }, { status: 400 }))
  }
}

/** Failures no endpoint declares: rendered by themselves (`Respondable`), or infrastructure (a 500). */
type Undeclared = ApiError | BareBadRequest | PersistenceError | SqlError.SqlError

const isInfrastructure = (error: unknown): error is PersistenceError | SqlError.SqlError => {
  const tag = (error as { readonly _tag?: unknown } | undefined)?._tag
  return tag === "PersistenceError" || tag === "SqlError"
}

/**
 * The one place a handler's failures meet HttpApi. Domain errors (src/domain/errors.ts) stay typed:
 * the endpoint must declare each one it can answer, and HttpApi encodes it into the envelope.
 * `ApiError` / `BareBadRequest` render themselves (`Respondable`) when no declared schema encodes
 * them. A repository's PersistenceError (or a raw SqlError) becomes, once: a 503 with Retry-After
 * when Postgres is unreachable (the client retries), else a defect, which the gateway logs with the
 * request id and answers 500. (A SqlError a service turned into a defect itself gets the same 503
 * from the gateway.)
 */
export const rendered = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, Undeclared>, R> =>
  Effect.catchIf(
    effect as Effect.Effect<A, unknown, R>,
    isInfrastructure,
    (error) =>
      isUnreachable(error)
        ? Effect.fail(new ApiError(databaseUnavailable))
        : Effect.die(error._tag === "PersistenceError" ? error.cause : error)
  ) as Effect.Effect<
    A,
    Exclude<E, Undeclared>,
    R
  >
