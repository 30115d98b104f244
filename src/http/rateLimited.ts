/** Applies a rate-limit decision (a project's, or a dashboard user's): the headers, then 429 when refused. */
import { Effect } from "effect"
import { RequestState } from "./errors.ts"
import type { RateDecision } from "./RateLimiter.ts"
import { RateLimited } from "./api/statusErrors.ts"

/**
 * Puts the rate-limit headers in `headers` (the response's) and returns the 429 when the decision
 * refuses, undefined when it admits. For plain code; `enforceRateLimit` is the Effect form.
 */
export const applyRateLimit = (
  decision: RateDecision,
  headers: Record<string, string>,
  counted = "",
  subject = "project"
): RateLimited | undefined => {
  if (decision.limit <= 0) return undefined
  headers["ratelimit-limit"] = String(decision.limit)
  headers["ratelimit-remaining"] = String(decision.remaining)
  headers["ratelimit-reset"] = String(decision.resetSeconds)
  if (decision.allowed) return undefined
  return new RateLimited({
    code: "RATE_LIMIT_EXCEEDED",
    message: `Rate limit of ${decision.limit} requests per minute exceeded for this ${subject}${counted}`,
    details: { limit: decision.limit, retryAfterSeconds: decision.retryAfterSeconds },
    suggestion: "Wait for the number of seconds in Retry-After, then retry.",
    headers: { "retry-after": String(decision.retryAfterSeconds) }
  })
}

/**
 * Puts the rate-limit headers on the response and refuses with 429 when the decision says so.
 * `counted` says what a request counts as, when it is not one request; `subject` whose limit it is.
 */
export const enforceRateLimit = Effect.fnUntraced(function*(decision: RateDecision, counted = "", subject = "project") {
  if (decision.limit <= 0) return
  const state = yield* Effect.service(RequestState)
  const refused = applyRateLimit(decision, state.headers, counted, subject)
  if (refused) return yield* refused
})
