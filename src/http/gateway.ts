/**
 * The outermost middleware of every route: gives each request an id and a body-size limit, and turns
 * every failure that escaped a handler (unknown route, malformed or oversized body, schema failure,
 * defect) into the error envelope, and times it into the request-duration histogram (route template and
 * status class). Per-request logging stays off the hot path: only 5xx are logged.
 */
import { ByteSize, Cause, Context, Effect, Layer, type Types } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerError, HttpServerRequest, HttpServerRespondable, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { randomBytesFromPool } from "../domain/ids.ts"
import { HttpMetrics } from "../observability/Metrics.ts"
import { isUnreachable } from "../lib/isolation.ts"
import { envelopeFieldsOf, envelopeResponse, type FieldError, RequestState, type RequestStateShape } from "./errors.ts"
import { BadRequest, isStatusError, PayloadTooLarge, ServiceUnavailable, type StatusError, ValidationFailed } from "./api/statusErrors.ts"
import { issueToFieldErrors } from "./api/fieldErrors.ts"

const KiB = 1024
const MiB = 1024 * KiB

/**
 * Bodies larger than this answer 413. /v1/send carries attachments (40 MB message, base64-encoded);
 * an SNS notification is at most 256 KiB; an image upload is bounded by UPLOAD_MAX_BYTES in its handler.
 */
export const bodyLimitFor = (url: string): number =>
  url.startsWith("/v1/send")
    ? 60 * MiB
    : url.startsWith("/uploads/image")
    ? 51 * MiB
    : url.startsWith("/contacts/import")
    ? 6 * MiB
    : url.startsWith("/webhooks/ses")
    ? 256 * KiB
    : 1 * MiB

const sizeOf = (bytes: number) => (bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`)

const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"]

/** The request-duration histogram's status label. */
export const statusClassOf = (status: number) => STATUS_CLASSES[Math.floor(status / 100) - 1] ?? "other"

/** The matched route's template (`/contacts/:id`), read while the router's context is still in place. */
const matchedRoute = Effect.withFiberSucceed((fiber) => Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)?.route.path)

export const newRequestId = () => `req_${randomBytesFromPool(12).toString("base64url")}`

/** A body that is not JSON. */
export const invalidJson = () => BadRequest.of("Request body is not valid JSON", "INVALID_JSON")

/** A body over its route's limit. */
export const payloadTooLarge = (url: string) => PayloadTooLarge.of(`Request body exceeds ${sizeOf(bodyLimitFor(url))}`)

/** Request fields that failed their schema: every one listed (the message is the field's when only one failed). */
export const inputInvalid = (errors: Array<FieldError>) =>
  ValidationFailed.of(errors, errors.length === 1 ? errors[0]!.message : "Request validation failed")

/** A status error raised outside an endpoint (or the gateway's own), as its response. */
const answer = (error: StatusError, requestId: string) => envelopeResponse(envelopeFieldsOf(error), requestId)

const toErrorResponse = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest,
  state: RequestStateShape
): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> => {
  const { requestId } = state
  const failure = cause.reasons.find((reason) => Cause.isFailReason(reason) || Cause.isDieReason(reason))
  // Interrupted (the client went away): passed on as it came, nothing but its interruptions (which HttpRouter
  // types `unhandled`: not this middleware's to answer).
  if (!failure) return Effect.failCause(Cause.fromReasons(cause.reasons.filter(Cause.isInterruptReason)))
  const error: unknown = Cause.isFailReason(failure) ? failure.error : failure.defect

  if (isStatusError(error)) return Effect.succeed(answer(error, requestId))
  if (HttpServerRespondable.isRespondable(error) && !HttpServerError.isHttpServerError(error)) {
    if (!HttpApiError.HttpApiSchemaError.is(error)) return HttpServerRespondable.toResponse(error)
  }
  if (HttpApiError.HttpApiSchemaError.is(error)) {
    const issue = error.cause.issue
    if (issue._tag === "InvalidValue" && String(issue.annotations?.message ?? "").includes("valid JSON")) {
      return Effect.succeed(answer(invalidJson(), requestId))
    }
    if (error.kind === "Payload" || error.kind === "Query" || error.kind === "Params" || error.kind === "Headers") {
      return Effect.succeed(answer(inputInvalid(issueToFieldErrors(issue)), requestId))
    }
  }
  if (HttpServerError.isHttpServerError(error)) {
    const reason = error.reason
    if (reason._tag === "RouteNotFound") {
      return Effect.succeed(envelopeResponse({
        status: 404,
        code: "NOT_FOUND",
        message: `No route for ${request.method} ${request.url.split("?")[0]}`
      }, requestId))
    }
    if (reason._tag === "RequestParseError") {
      return Effect.succeed(
        reason.reason === "BodyTooLarge"
          ? answer(payloadTooLarge(request.url), requestId)
          : envelopeResponse({ status: 400, code: "BAD_REQUEST", message: "Could not read the request body" }, requestId)
      )
    }
  }
  if (isUnreachable(error)) {
    // Not a bug: /readyz and the pool say Postgres is away; a line per refused request would flood the log.
    return Effect.logDebug("database unavailable", { requestId, method: request.method, url: request.url }).pipe(
      Effect.as(answer(ServiceUnavailable.database(), requestId))
    )
  }
  return Effect.logError("unhandled error", { requestId, method: request.method, url: request.url }, cause).pipe(
    Effect.as(envelopeResponse({ status: 500, code: "INTERNAL_SERVER_ERROR", message: "An unexpected error occurred" }, requestId))
  )
}

export const Gateway = HttpRouter.middleware((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const state: RequestStateShape = { requestId: newRequestId(), headers: {} }
    const started = performance.now()
    let route: string | undefined
    let response = yield* httpEffect.pipe(
      Effect.onExit(() => Effect.map(matchedRoute, (path) => void (route = path))),
      Effect.provideService(RequestState, state),
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(bodyLimitFor(request.url))),
      Effect.catchCause((cause) => Effect.provideService(toErrorResponse(cause, request, state), RequestState, state))
    )
    if (response.status === 415) {
      response = envelopeResponse({
        status: 415,
        code: "UNSUPPORTED_MEDIA_TYPE",
        message: "Send the body as application/json"
      }, state.requestId)
    }
    HttpMetrics.requestSeconds.observe((performance.now() - started) / 1000, {
      method: request.method,
      route: route ?? "unmatched",
      status: statusClassOf(response.status)
    })
    return HttpServerResponse.setHeaders(response, { ...state.headers, "x-request-id": state.requestId })
  }), { global: true })

export const GatewayLive: Layer.Layer<never, never, HttpRouter.HttpRouter> = Gateway
