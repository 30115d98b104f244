/**
 * The server's side of the error envelope. Handlers and middleware fail with the contract's error
 * classes (api/statusErrors.ts, one per status, and the domain's in src/domain/errors.ts); every
 * endpoint declares the ones it answers and HttpApi encodes them through the one codec in api/errors.ts.
 * What is left here: `rendered`, which maps a repository's infrastructure failure once, and the
 * envelope as a response for the answers written outside HttpApi (the gateway's unknown routes, bad
 * bodies and defects; the track fast path), built by the same `envelopeBody`.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { SqlError } from "effect/sql"
import { isUnreachable } from "../lib/isolation.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import { envelopeBody, type EnvelopeFields as BodyFields, type FieldErrorSchema } from "./api/errors.ts"
import { type StatusError, statusOf, ServiceUnavailable } from "./api/statusErrors.ts"

export { RequestState, type RequestStateShape } from "./api/errors.ts"

/** One invalid field of a request, as the envelope's `errors[]` lists it (its schema is the domain's). */
export type FieldError = typeof FieldErrorSchema.Type

export interface EnvelopeFields extends BodyFields {
  readonly headers?: Record<string, string> | undefined
}

export const envelopeResponse = (fields: EnvelopeFields, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(envelopeBody(fields, requestId, new Date()), { status: fields.status, headers: fields.headers })

/** A status error as the envelope's fields, for an answer written outside HttpApi. */
export const envelopeFieldsOf = (error: StatusError): EnvelopeFields => ({
  status: statusOf(error) ?? 500,
  code: error.code,
  message: error.message,
  errors: error.errors,
  details: error.details,
  suggestion: error.suggestion,
  headers: error.headers
})

type Infrastructure = PersistenceError | SqlError.SqlError

const isInfrastructure = <E>(error: E): error is Extract<E, Infrastructure> => {
  const tag = (error as { readonly _tag?: unknown } | undefined)?._tag
  return tag === "PersistenceError" || tag === "SqlError"
}

/**
 * Where a repository's failure meets HttpApi, once: a PersistenceError (or a raw SqlError) becomes a
 * 503 with Retry-After when Postgres is unreachable (the client retries), else a defect, which the
 * gateway logs with the request id and answers 500. Every other failure stays typed, for the endpoint
 * to declare. (A SqlError a service turned into a defect itself gets the same 503 from the gateway.)
 */
export const rendered = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      isInfrastructure<E>,
      (error): Effect.Effect<never, ServiceUnavailable> =>
        isUnreachable(error)
          ? Effect.fail(ServiceUnavailable.database())
          : Effect.die(error._tag === "PersistenceError" ? error.cause : error),
      Effect.fail
    )
  )
