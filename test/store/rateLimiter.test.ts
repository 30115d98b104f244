/**
 * The rate limiter's leased mode (limits from LEASED_FROM per minute) at the layer level, against a real
 * Postgres: two limiters over one database stand for two api processes. However the requests fall on
 * them, the window never admits more than the limit, and it admits all but at most a block per process.
 * The exact mode (small limits) is covered end to end by test/http/rateLimit.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig } from "../../src/config.ts"
import { LEASED_FROM, RateLimiter } from "../../src/http/RateLimiter.ts"
import { insertProject, TestDatabase } from "../support/database.ts"

const LIMIT = LEASED_FROM
const BLOCK = LIMIT / 200

const Config = AppConfig.layer.pipe(
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ RATE_LIMIT_PER_MINUTE: String(LIMIT) })))
)

/** A limiter of its own (its own leases), as a second api process has. */
const anotherProcess = Effect.gen(function*() {
  const context = yield* Layer.build(RateLimiter.layer)
  return context.mapUnsafe.get(RateLimiter.key) as RateLimiter["Service"]
})

// Aligned with a fresh window, so the minute does not turn mid-test.
const freshWindow = Effect.promise(async () => {
  const msIntoMinute = Date.now() % 60_000
  if (msIntoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - msIntoMinute + 100))
})

layer(RateLimiter.layer.pipe(Layer.provideMerge(Config), Layer.provideMerge(TestDatabase)), { timeout: 120_000 })("leased rate limit", (it) => {
  describe("two processes over one window", () => {
    it.effect("admit no more than the limit, and all but a block per process", () =>
      Effect.scoped(Effect.gen(function*() {
        yield* freshWindow
        const projectId = yield* insertProject
        const first = yield* RateLimiter
        const second = yield* anotherProcess
        const decisions = yield* Effect.forEach(
          Array.from({ length: LIMIT + 500 }, (_, i) => (i % 3 === 0 ? second : first)),
          (limiter) => limiter.check(projectId),
          { concurrency: 64 }
        )
        const allowed = decisions.filter((decision) => decision.allowed).length
        expect(allowed).toBeLessThanOrEqual(LIMIT)
        expect(allowed).toBeGreaterThanOrEqual(LIMIT - 2 * BLOCK)
        const refused = decisions.filter((decision) => !decision.allowed)
        expect(refused.length).toBe(decisions.length - allowed)
        for (const decision of refused) {
          expect(decision).toMatchObject({ limit: LIMIT, remaining: 0 })
          expect(decision.resetSeconds).toBeGreaterThanOrEqual(1)
        }
        // Once the window is spent, a refusal costs no round trip and a batch that does not fit is refused whole.
        expect((yield* first.check(projectId, 5)).allowed).toBe(false)
      })))

    it.effect("counts a batch's events together, and another project has its own window", () =>
      Effect.gen(function*() {
        yield* freshWindow
        const limiter = yield* RateLimiter
        const [busy, quiet] = [yield* insertProject, yield* insertProject]
        const big = yield* limiter.check(busy, LIMIT - 10)
        expect(big.allowed).toBe(true)
        expect(big.remaining).toBeLessThanOrEqual(10)
        expect((yield* limiter.check(busy, 11)).allowed).toBe(false)
        expect((yield* limiter.check(quiet)).allowed).toBe(true)
      }))
  })
})
