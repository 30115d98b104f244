/** Applies the per-minute request limit to one key (a project, or a dashboard user): headers, then 429. */
import { Effect } from "effect"
import { ApiError, RequestState } from "./errors.ts"
import type { RateLimiter } from "./RateLimiter.ts"

export const enforceRateLimit = (rateLimiter: RateLimiter["Service"], key: string, subject: string) =>
  Effect.gen(function*() {
    const decision = yield* rateLimiter.check(key)
    if (decision.limit <= 0) return
    const state = yield* Effect.service(RequestState)
    state.headers["ratelimit-limit"] = String(decision.limit)
    state.headers["ratelimit-remaining"] = String(decision.remaining)
    state.headers["ratelimit-reset"] = String(decision.resetSeconds)
    if (!decision.allowed) {
      return yield* new ApiError({
        status: 429,
        code: "RATE_LIMITED",
        message: `Rate limit of ${decision.limit} requests per minute exceeded for this ${subject}`,
        details: { limit: decision.limit, retryAfterSeconds: decision.resetSeconds },
        suggestion: "Wait for the number of seconds in Retry-After, then retry.",
        headers: { "retry-after": String(decision.resetSeconds) }
      })
    }
  })
