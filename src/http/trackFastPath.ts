/**
 * POST /v1/track (and /events/track) straight from Node's `request` event, without the router and
 * HttpApi. Why: per request, HttpApi's machinery (route matching, the security middleware, payload
 * and success codecs, the handlers' whole service map copied into the request's context) costs more
 * CPU than the work of tracking an event, and /v1/track is the endpoint high-volume apps call most.
 *
 * Only the HTTP framing lives here: the key check (auth.ts), the body's schema (api/track.ts) and the
 * tracking itself (handlers/track.ts) are the HttpApi endpoint's own, and the answers, headers,
 * error envelopes and metrics are the same byte for byte (test/http/trackFastPath.test.ts compares
 * both paths). It runs as plain code, not as an Effect: the services' caches are read directly (a
 * cached key, leased rate-limit permits, a cached contact) and the event joins the publisher's next
 * envelope through a callback, so a request costs no fiber; a cache miss runs that service's Effect. Requests this path does not take (another method or path, a query string, a body that
 * is not declared JSON, no bearer key, an Idempotency-Key) go to the Effect app unchanged.
 */
import { Cause, Context, Effect, Exit, Layer, Result } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { AppConfig } from "../config.ts"
import { HttpMetrics } from "../observability/Metrics.ts"
import { keyVerdict } from "./auth.ts"
import { envelopeBody } from "./api/errors.ts"
import { isUnreachable } from "../lib/isolation.ts"
import { type EnvelopeFields, envelopeFieldsOf, rendered, type RequestStateShape } from "./errors.ts"
import { bodyLimitFor, inputInvalid, invalidJson, newRequestId, payloadTooLarge, statusClassOf } from "./gateway.ts"
import { makeTrackNow, type RunForValue, type TrackPath } from "./handlers/track.ts"
import { decodeTrackBody, type TrackPayload } from "./handlers/trackedEvent.ts"
import { applyRateLimit } from "./rateLimited.ts"
import { type RateDecision, RateLimiter } from "./RateLimiter.ts"
import { type AuthenticatedKey, type Project, Projects } from "../store/Projects.ts"
import { issueToFieldErrors } from "./api/fieldErrors.ts"
import { isStatusError, ServiceUnavailable, type StatusError, Unauthorized } from "./api/statusErrors.ts"

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
  request.once("end", () => {
    if (tooLarge) return done({ _tag: "TooLarge" })
    // A small body comes in one chunk: no copy.
    done({ _tag: "Text", text: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString("utf8") })
  })
  // A client that goes away mid-body gets no answer, as in the Effect app.
  request.once("error", () => {})
}

/** The body as HttpApi decodes it: empty is `undefined`, then JSON, then the TrackBody schema; or the error to answer. */
const payloadOf = (body: Body, url: string): TrackPayload | StatusError => {
  if (body._tag === "TooLarge") return payloadTooLarge(url)
  let json: unknown = undefined
  if (body.text !== "") {
    try {
      json = JSON.parse(body.text)
    } catch {
      return invalidJson()
    }
  }
  const decoded = decodeTrackBody(json)
  return Result.isFailure(decoded) ? inputInvalid(issueToFieldErrors(decoded.failure.issue)) : decoded.success
}

/** An Effect run for the plain code failed: its cause, answered as the Effect app would. */
class EffectFailed {
  readonly cause: Cause.Cause<unknown>
  constructor(cause: Cause.Cause<unknown>) {
    this.cause = cause
  }
}

/** What a rejection of the plain code is, as a Cause: a status error fails, an Effect's cause stays, anything else is a defect. */
const causeOf = (error: unknown): Cause.Cause<unknown> =>
  error instanceof EffectFailed ? error.cause : isStatusError(error) ? Cause.fail(error) : Cause.die(error)

/** Writes `body` as JSON; `headers` (the caller's own object, not copied) gets the content headers. */
const writeJson = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string | number>) => {
  const json = JSON.stringify(body)
  headers["content-type"] = "application/json"
  headers["content-length"] = Buffer.byteLength(json)
  response.writeHead(status, headers)
  response.end(json)
}

/** How a request ends: its answer's Exit. */
type Done = (exit: Exit.Exit<unknown, unknown>) => void

export class TrackFastPath extends Context.Service<TrackFastPath, {
  /** Answers the request if it is a /v1/track call this path takes; false leaves it to the Effect app. */
  readonly take: (request: IncomingMessage, response: ServerResponse) => boolean
  /** The server drains: every answer not yet started closes its connection (server.ts). */
  readonly drain: () => void
}>()("app/http/TrackFastPath") {
  static readonly layer = Layer.effect(
    TrackFastPath,
    Effect.gen(function*() {
      const { trackMaxInFlight } = yield* AppConfig
      const projects = yield* Projects
      const rateLimiter = yield* RateLimiter
      const trackNow = yield* makeTrackNow
      const run = Effect.runForkWith(yield* Effect.context<never>())

      const runForValue: RunForValue = (effect) =>
        new Promise((resolve, reject) =>
          run(effect).addObserver((exit) => Exit.isSuccess(exit) ? resolve(exit.value) : reject(new EffectFailed(exit.cause)))
        )

      /**
       * The HttpApi endpoint's steps in its order (auth.ts's key check and rate limit, then the body,
       * then the tracking), each from a cache when it can be, else through its service's Effect. Plain
       * callbacks, not async functions: a request whose key, permits and contact are cached makes no
       * promise before its answer. `done` is called once.
       */
      const handle = (body: Body, presentedKey: string, url: TrackPath, state: RequestStateShape, done: Done) => {
        const fail = (error: unknown) => done(Exit.failCause(causeOf(error)))
        /** A step that runs after an Effect: what it throws fails the request. */
        const guarded = <A>(step: (value: A) => void) => (value: A) => {
          try {
            step(value)
          } catch (error) {
            fail(error)
          }
        }
        const withDecision = (project: Project, decision: RateDecision) => {
          const refused = applyRateLimit(decision, state.headers)
          if (refused) throw refused
          const payload = payloadOf(body, url)
          if (isStatusError(payload)) throw payload
          trackNow(project, payload, runForValue, (error, value) => error === undefined ? done(Exit.succeed(value)) : fail(error))
        }
        const withKey = (authenticated: AuthenticatedKey | undefined) => {
          const verdict = keyVerdict(authenticated, "public")
          if (isStatusError(verdict)) throw verdict
          const decision = rateLimiter.checkNow(verdict.id)
          if (decision) return withDecision(verdict, decision)
          runForValue(rateLimiter.check(verdict.id)).then(guarded((checked) => withDecision(verdict, checked)), fail)
        }
        try {
          const key = presentedKey.trim()
          if (key === "") throw Unauthorized.invalidApiKey("Missing API key")
          const cached = projects.authenticateCached(key)
          if (cached) return withKey(cached.value)
          runForValue(rendered(projects.authenticate(key))).then(guarded(withKey), fail)
        } catch (error) {
          fail(error)
        }
      }

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
          // The rate-limit headers, then the id (the Effect app's order); state.headers is this request's own.
          const headers: Record<string, string | number> = state.headers
          headers["x-request-id"] = state.requestId
          if (draining) headers.connection = "close"
          writeJson(response, status, exit.value, headers)
        } else {
          // A status error is its envelope; Postgres unreachable is a 503; anything else is a 500, logged as
          // the gateway logs it.
          const failure = exit.cause.reasons.find((reason) => Cause.isFailReason(reason) || Cause.isDieReason(reason))
          const error = failure === undefined ? undefined : Cause.isFailReason(failure) ? failure.error : failure.defect
          const known = isStatusError(error)
            ? envelopeFieldsOf(error)
            : isUnreachable(error)
            ? envelopeFieldsOf(ServiceUnavailable.database())
            : undefined
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
            ...(unread || draining ? { connection: "close" } : {})
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
      let draining = false
      const overloaded = ServiceUnavailable.of("The server is at capacity; retry after the seconds in Retry-After")
      const shed = (request: IncomingMessage, response: ServerResponse, started: number) => {
        HttpMetrics.trackShed.inc()
        const state: RequestStateShape = { requestId: newRequestId(), headers: {} }
        answer(request, response, state, Exit.fail(overloaded), started, true)
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
          const reply = (exit: Exit.Exit<unknown, unknown>) => {
            try {
              answer(request, response, state, exit, started, body._tag === "TooLarge")
            } catch (error) {
              // Node refused the answer (the socket is gone, say): the process goes on serving.
              run(Effect.logError("could not answer", { requestId: state.requestId, url }, error))
              response.destroy()
            }
          }
          handle(body, key, url as TrackPath, state, reply)
        })
        return true
      }

      return TrackFastPath.of({ take, drain: () => void (draining = true) })
    })
  )
}
