/**
 * POST /v1/track (and /events/track) straight from Node's `request` event, without the router and
 * HttpApi. Why: per request, HttpApi's machinery (route matching, the security middleware, payload
 * and success codecs, the handlers' whole service map copied into the request's context) costs more
 * CPU than the work of tracking an event, and /v1/track is the endpoint high-volume apps call most.
 *
 * Only the HTTP framing lives here: the key check (auth.ts), the body's schema (api/track.ts) and the
 * tracking itself (handlers/track.ts) are the HttpApi endpoint's own, and the answers, headers,
 * error envelopes and metrics are the same byte for byte (test/http/trackFastPath.test.ts compares
 * both paths). Requests this path does not take (another method or path, a query string, a body that
 * is not declared JSON, no bearer key, an Idempotency-Key) go to the Effect app unchanged.
 */
import { Cause, Context, Effect, Exit, Layer, Result } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { AppConfig } from "../config.ts"
import { HttpMetrics } from "../observability/Metrics.ts"
import { makeKeyCheck } from "./auth.ts"
import { envelopeBody } from "./api/errors.ts"
import { isUnreachable } from "../lib/isolation.ts"
import { ApiError, databaseUnavailable, type EnvelopeFields, RequestState, type RequestStateShape, serviceUnavailable } from "./errors.ts"
import { bodyLimitFor, inputInvalid, invalidJson, newRequestId, payloadTooLarge, statusClassOf } from "./gateway.ts"
import { makeTrack, type TrackPath } from "./handlers/track.ts"
import { decodeTrackBody } from "./handlers/trackedEvent.ts"
import { issueToFieldErrors } from "./api/fieldErrors.ts"

const TRACK_PATHS: ReadonlySet<string> = new Set<TrackPath>(["/v1/track", "/events/track"])

/** The bearer credential as HttpApiSecurity.bearer reads it (RFC 9110: case-insensitive scheme, 1*SP). */
const bearerCredential = (authorization: string | undefined): string | undefined => {
  if (authorization === undefined || authorization.length <= 6 || authorization.charCodeAt(6) !== 32) return undefined
  if (authorization.slice(0, 6).toLowerCase() !== "bearer") return undefined
  let start = 7
  while (authorization.charCodeAt(start) === 32) start++
  return start === authorization.length ? undefined : authorization.slice(start)
}

/** A JSON body, as HttpApi picks the payload's codec: no Content-Type means JSON. */
const declaresJson = (contentType: string | undefined) =>
  contentType === undefined || contentType.split(";")[0]!.trim().toLowerCase() === "application/json"

/** What the request body turned out to be, read before the key is checked (HttpApi checks the key first). */
type Body =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "TooLarge" }

const readBody = (request: IncomingMessage, limit: number, done: (body: Body) => void) => {
  const chunks: Array<Buffer> = []
  let size = 0
  let tooLarge = Number(request.headers["content-length"]) > limit
  if (tooLarge) return done({ _tag: "TooLarge" })
  request.on("data", (chunk: Buffer) => {
    if (tooLarge) return
    size += chunk.length
    if (size > limit) {
      tooLarge = true
      chunks.length = 0
      return
    }
    chunks.push(chunk)
  })
  request.once("end", () => done(tooLarge ? { _tag: "TooLarge" } : { _tag: "Text", text: Buffer.concat(chunks).toString("utf8") }))
  // A client that goes away mid-body gets no answer, as in the Effect app.
  request.once("error", () => {})
}

/** The body as HttpApi decodes it: empty is `undefined`, then JSON, then the TrackBody schema. */
const payloadOf = (body: Body, url: string) => {
  if (body._tag === "TooLarge") return Effect.fail(new ApiError(payloadTooLarge(url)))
  let json: unknown = undefined
  if (body.text !== "") {
    try {
      json = JSON.parse(body.text)
    } catch {
      return Effect.fail(new ApiError(invalidJson))
    }
  }
  const decoded = decodeTrackBody(json)
  return Result.isFailure(decoded)
    ? Effect.fail(new ApiError(inputInvalid(issueToFieldErrors(decoded.failure.issue))))
    : Effect.succeed(decoded.success)
}

const writeJson = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string>) => {
  const json = JSON.stringify(body)
  response.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(json) })
  response.end(json)
}

export class TrackFastPath extends Context.Service<TrackFastPath, {
  /** Answers the request if it is a /v1/track call this path takes; false leaves it to the Effect app. */
  readonly take: (request: IncomingMessage, response: ServerResponse) => boolean
}>()("app/http/TrackFastPath") {
  static readonly layer = Layer.effect(
    TrackFastPath,
    Effect.gen(function*() {
      const { trackMaxInFlight } = yield* AppConfig
      const checkPublicKey = yield* makeKeyCheck("public")
      const track = yield* makeTrack
      const run = Effect.runForkWith(yield* Effect.context<never>())

      const answer = (
        request: IncomingMessage,
        response: ServerResponse,
        state: RequestStateShape,
        exit: Exit.Exit<unknown, unknown>,
        started: number,
        unread: boolean
      ) => {
        let status = 200
        if (Exit.isSuccess(exit)) {
          writeJson(response, status, exit.value, { ...state.headers, "x-request-id": state.requestId })
        } else {
          // An ApiError renders itself; Postgres unreachable is a 503; anything else is a 500, logged as
          // the gateway logs it.
          const failure = exit.cause.reasons.find((reason) => Cause.isFailReason(reason) || Cause.isDieReason(reason))
          const error = failure === undefined ? undefined : Cause.isFailReason(failure) ? failure.error : failure.defect
          const known = error instanceof ApiError ? error : isUnreachable(error) ? databaseUnavailable : undefined
          if (!known) {
            run(Effect.logError("unhandled error", { requestId: state.requestId, method: request.method, url: request.url }, exit.cause))
          }
          const fields: EnvelopeFields = known ?? {
            status: 500,
            code: "INTERNAL_SERVER_ERROR",
            message: "An unexpected error occurred"
          }
          status = fields.status
          writeJson(response, status, envelopeBody(fields, state.requestId, new Date()), {
            ...fields.headers,
            ...state.headers,
            "x-request-id": state.requestId,
            // The body was left unread: the connection cannot carry another request.
            ...(unread ? { connection: "close" } : {})
          })
        }
        HttpMetrics.requestSeconds.observe((performance.now() - started) / 1000, {
          method: "POST",
          route: request.url!,
          status: statusClassOf(status)
        })
      }

      /**
       * Requests taken and not yet answered. Past TRACK_MAX_IN_FLIGHT the process is past its capacity:
       * a new request is answered 503 at once (its body unread) rather than queued behind the others,
       * so latency stays bounded and the client knows to back off.
       */
      let inFlight = 0
      const overloaded = serviceUnavailable("The server is at capacity; retry after the seconds in Retry-After")
      const shed = (request: IncomingMessage, response: ServerResponse, started: number) => {
        HttpMetrics.trackShed.inc()
        const state: RequestStateShape = { requestId: newRequestId(), headers: {} }
        answer(request, response, state, Exit.fail(new ApiError(overloaded)), started, true)
      }

      const take = (request: IncomingMessage, response: ServerResponse): boolean => {
        const url = request.url!
        if (request.method !== "POST" || !TRACK_PATHS.has(url)) return false
        const headers = request.headers
        if (headers["idempotency-key"] !== undefined || !declaresJson(headers["content-type"])) return false
        const key = bearerCredential(headers.authorization)
        if (key === undefined) return false
        const started = performance.now()
        HttpMetrics.trackFastPath.inc()
        if (trackMaxInFlight > 0 && inFlight >= trackMaxInFlight) {
          shed(request, response, started)
          return true
        }
        // Counted until its answer is sent, or its client goes away (then no body end may ever come).
        inFlight++
        response.once("close", () => void inFlight--)
        readBody(request, bodyLimitFor(url), (body) => {
          const state: RequestStateShape = { requestId: newRequestId(), headers: {} }
          const work = checkPublicKey(
            Effect.flatMap(payloadOf(body, url), (payload) => track({ payload, headers: {} }, url as TrackPath)),
            key
          ).pipe(Effect.provideService(RequestState, state))
          run(work).addObserver((exit) => {
            try {
              answer(request, response, state, exit, started, body._tag === "TooLarge")
            } catch (error) {
              // Node refused the answer (the socket is gone, say): the process goes on serving.
              run(Effect.logError("could not answer", { requestId: state.requestId, url }, error))
              response.destroy()
            }
          })
        })
        return true
      }

      return TrackFastPath.of({ take })
    })
  )
}
