/**
 * The key-checking middleware behind SecretKeyAuth and PublicKeyAuth: resolves the project from the
 * bearer key, enforces the key type of the endpoint (both mismatches are 401 INVALID_API_KEY), then
 * applies the per-project rate limit.
 */
import { Effect, Layer, Redacted } from "effect"
import type { HttpServerResponse } from "effect/http"
import { type KeyKind, Projects } from "../store/Projects.ts"
import { CurrentProject, PublicKeyAuth, SecretKeyAuth } from "./api/security.ts"
import { ApiError, RequestState } from "./errors.ts"
import { type RateDecision, RateLimiter } from "./RateLimiter.ts"

/**
 * Puts the rate-limit headers on the response and refuses with 429 when the decision says so.
 * `counted` says what a request counts as, when it is not one request.
 */
export const enforceRateLimit = Effect.fnUntraced(function*(decision: RateDecision, counted = "") {
  if (decision.limit <= 0) return
  const state = yield* Effect.service(RequestState)
  state.headers["ratelimit-limit"] = String(decision.limit)
  state.headers["ratelimit-remaining"] = String(decision.remaining)
  state.headers["ratelimit-reset"] = String(decision.resetSeconds)
  if (!decision.allowed) {
    return yield* new ApiError({
      status: 429,
      code: "RATE_LIMITED",
      message: `Rate limit of ${decision.limit} requests per minute exceeded for this project${counted}`,
      details: { limit: decision.limit, retryAfterSeconds: decision.resetSeconds },
      suggestion: "Wait for the number of seconds in Retry-After, then retry.",
      headers: { "retry-after": String(decision.resetSeconds) }
    })
  }
})

const makeKeyCheck = Effect.fnUntraced(function*(required: KeyKind) {
  const projects = yield* Projects
  const rateLimiter = yield* RateLimiter
  return <E, R>(
    httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    { credential }: { readonly credential: Redacted.Redacted<string> }
  ) =>
    Effect.gen(function*() {
      const key = Redacted.value(credential).trim()
      if (key === "") return yield* ApiError.invalidApiKey("Missing API key")
      const auth = yield* projects.authenticate(key)
      if (!auth) return yield* ApiError.invalidApiKey("Invalid API key")
      if (auth.kind !== required) {
        return yield* ApiError.invalidApiKey(
          required === "public"
            ? "This endpoint takes the project's public key (pk_); the secret key is rejected here"
            : "This endpoint takes the project's secret key (sk_); the public key only works on /v1/track and /v1/track/batch"
        )
      }
      if (auth.project.disabled) {
        return yield* new ApiError({ status: 403, code: "PROJECT_DISABLED", message: "This project is disabled" })
      }
      yield* enforceRateLimit(yield* rateLimiter.check(auth.project.id))
      return yield* Effect.provideService(httpEffect, CurrentProject, auth.project)
    })
})

// ApiError renders itself (see `rendered` in errors.ts), so the middleware's failures need no schema.
export const SecretKeyAuthLive = Layer.effect(
  SecretKeyAuth,
  Effect.map(makeKeyCheck("secret"), (check) => SecretKeyAuth.of({ secretKey: check as any }))
)

export const PublicKeyAuthLive = Layer.effect(
  PublicKeyAuth,
  Effect.map(makeKeyCheck("public"), (check) => PublicKeyAuth.of({ publicKey: check as any }))
)
