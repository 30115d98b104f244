/**
 * Every way an API call can fail, as one value the pages show: a declared error envelope (the typed
 * error the client decoded it into: a status error, src/http/api/statusErrors.ts, or a domain error,
 * src/domain/errors.ts), the flat
 * `{ error }` 400 (the reference's LegacyError), a status the endpoint does not declare, the network,
 * or an answer that does not match the contract (a server newer or older than this app); and a request
 * this app refused to send because it does not fit the contract's own schemas (a 422 found here, with the
 * fields and messages the server's 422 would name).
 */
import { Cause, Effect, Schema, type SchemaIssue } from "effect"
import { HttpClientError } from "effect/http"
import { domainErrorInfo } from "../../../src/domain/errors.ts"
import { ErrorEnvelope } from "../../../src/http/api/errors.ts"
import { isStatusError, LegacyError, statusOf } from "../../../src/http/api/statusErrors.ts"
import { issueToFieldErrors } from "../../../src/http/api/fieldErrors.ts"

export class ApiFailure extends Error {
  override readonly name = "ApiFailure"
  readonly code: string
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number
  /** The server's id for the request (quote it when reporting a problem); null when no answer arrived. */
  readonly requestId: string | null
  /** A 422's invalid fields, by path (`condition.groups[0].filters[1].value`); empty otherwise. */
  readonly fieldErrors: ReadonlyArray<FieldError>
  /** The envelope's `details` (an unverified sender's `domain`, ...); empty when it has none. */
  readonly details: Readonly<Record<string, unknown>>
  /** Found by this page before sending (the request does not fit the contract): nothing reached the server. */
  readonly local: boolean

  constructor(fields: {
    readonly message: string
    readonly code: string
    readonly status: number
    readonly requestId: string | null
    readonly fieldErrors?: ReadonlyArray<FieldError>
    readonly details?: Readonly<Record<string, unknown>>
    readonly local?: boolean
  }) {
    super(fields.message)
    this.code = fields.code
    this.status = fields.status
    this.requestId = fields.requestId
    this.fieldErrors = fields.fieldErrors ?? []
    this.details = fields.details ?? {}
    this.local = fields.local ?? false
  }

  /** A 4xx: the request itself is wrong, so repeating it will not help. */
  get isClientError(): boolean {
    return this.status >= 400 && this.status < 500
  }
}

export interface FieldError {
  readonly field: string
  readonly message: string
  readonly code: string
}

/** What the call saw of the last response, for failures whose value does not carry it. */
export interface ResponseSeen {
  status: number | null
  requestId: string | null
}

const isEnvelope = Schema.is(ErrorEnvelope)
const LegacyBody = Schema.Struct({ error: Schema.String })
const isLegacy = Schema.is(LegacyBody)

const fromEnvelope = (envelope: ErrorEnvelope, seen: ResponseSeen) =>
  new ApiFailure({
    message: envelope.error.message,
    code: envelope.error.code,
    status: envelope.error.statusCode,
    requestId: envelope.error.requestId || seen.requestId,
    fieldErrors: (envelope.error.errors ?? []).map(({ field, message, code }) => ({ field, message, code })),
    details: envelope.error.details
  })

/** A response the client did not decode (a status the endpoint does not declare, or a body that does not fit). */
const fromResponse = (error: HttpClientError.HttpClientError, seen: ResponseSeen): Effect.Effect<ApiFailure> => {
  const response = error.response!
  const requestId = response.headers["x-request-id"] ?? seen.requestId
  return response.json.pipe(
    Effect.map((body) =>
      isEnvelope(body)
        ? fromEnvelope(body, { status: response.status, requestId })
        : isLegacy(body)
        ? new ApiFailure({ message: body.error, code: "BAD_REQUEST", status: response.status, requestId })
        : undefined
    ),
    Effect.orElseSucceed(() => undefined),
    Effect.map((failure) =>
      failure ?? new ApiFailure({
        message: `The server answered ${response.status}${response.status >= 500 ? ": try again in a moment" : ""}`,
        code: response.status >= 500 ? "SERVER_ERROR" : "UNEXPECTED_RESPONSE",
        status: response.status,
        requestId
      })
    )
  )
}

const contractMismatch = (seen: ResponseSeen) =>
  new ApiFailure({
    message: "The server's answer does not match what this page expects. Reload the page to get the current version.",
    code: "CONTRACT_MISMATCH",
    status: seen.status ?? 0,
    requestId: seen.requestId
  })

/**
 * A request the client could not encode: a value the contract's schemas refuse (`bob@bar` for an email),
 * caught before sending. Named field by field as the server's 422 would (same walk over the same
 * schemas), so pages show it at the fields; reloading would not help, so it does not say to.
 */
const requestInvalid = (issue: SchemaIssue.Issue) => {
  const fieldErrors = issueToFieldErrors(issue).map(({ field, message, code }) => ({ field, message, code }))
  return new ApiFailure({
    message: fieldErrors.length === 1 ? fieldErrors[0]!.message : "Some fields are not valid: see each one's message.",
    code: "VALIDATION_ERROR",
    status: 422,
    requestId: null,
    fieldErrors,
    local: true
  })
}

const networkFailure = () =>
  new ApiFailure({
    message: "Could not reach the server. Check your connection and try again.",
    code: "NETWORK_ERROR",
    status: 0,
    requestId: null
  })

/** Maps whatever an HttpApiClient call failed with into one ApiFailure. */
export const toApiFailure = (error: unknown, seen: ResponseSeen): Effect.Effect<ApiFailure> => {
  if (error instanceof ApiFailure) return Effect.succeed(error)
  if (isEnvelope(error)) return Effect.succeed(fromEnvelope(error, seen))
  const domain = domainErrorInfo(error)
  if (domain) {
    return Effect.succeed(
      new ApiFailure({
        message: domain.error.message,
        code: domain.code,
        status: domain.status,
        requestId: seen.requestId,
        // A domain error can be a 422 naming its field (TransitionExists, DeadLetterNotReplayable).
        fieldErrors: (domain.error.errors ?? []).map(({ field, message, code }) => ({ field, message, code }))
      })
    )
  }
  if (isStatusError(error)) {
    return Effect.succeed(
      new ApiFailure({
        message: error.message,
        code: error.code,
        status: statusOf(error) ?? seen.status ?? 0,
        requestId: error.requestId || seen.requestId,
        fieldErrors: (error.errors ?? []).map(({ field, message, code }) => ({ field, message, code })),
        details: error.details
      })
    )
  }
  if (error instanceof LegacyError) {
    return Effect.succeed(
      new ApiFailure({ message: error.message, code: "BAD_REQUEST", status: 400, requestId: seen.requestId })
    )
  }
  if (isLegacy(error)) {
    return Effect.succeed(
      new ApiFailure({ message: error.error, code: "BAD_REQUEST", status: seen.status ?? 400, requestId: seen.requestId })
    )
  }
  if (HttpClientError.isHttpClientError(error)) {
    if (error.response !== undefined) return fromResponse(error, seen)
    return Effect.succeed(error.reason._tag === "TransportError" ? networkFailure() : contractMismatch(seen))
  }
  // Before any response, a schema failure is the request's own (encoding it); after one, the answer's.
  if (Schema.isSchemaError(error)) return Effect.succeed(seen.status === null ? requestInvalid(error.issue) : contractMismatch(seen))
  return Effect.succeed(
    new ApiFailure({
      message: error instanceof Error ? error.message : "Something went wrong in this page",
      code: "CLIENT_ERROR",
      status: seen.status ?? 0,
      requestId: seen.requestId
    })
  )
}

/** The failure of a cause: its first failure, else its first defect (interruptions stay interruptions). */
export const failureOfCause = (cause: Cause.Cause<unknown>, seen: ResponseSeen): Effect.Effect<ApiFailure> | undefined => {
  const reason = cause.reasons.find((reason) => Cause.isFailReason(reason)) ?? cause.reasons.find((reason) => Cause.isDieReason(reason))
  if (reason === undefined) return undefined
  return toApiFailure(Cause.isFailReason(reason) ? reason.error : reason.defect, seen)
}
