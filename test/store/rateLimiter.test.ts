/**
 * The rate limiter at the layer level, against a real Postgres: limiters built over one database stand
 * for api processes. In leased mode (limits from LEASED_FROM per minute), however the requests fall on
 * them, the window never admits more than the limit, and it admits all but at most a block per process.
 * In either mode, with the service clock (a TestClock here) moved through several minutes at random,
 * no 60 s span ever admits more than the limit (a sliding window, not fixed minutes), and a refusal is
 * never more than a second's requests too early, whether a process decides through `check` or, as the
 * track fast path does, `checkNow` first. Exact mode end to end: test/http/rateLimit.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../../src/config.ts"
import { LEASE_SECONDS, LEASED_FROM, RateLimiter } from "../../src/http/RateLimiter.ts"
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

layer(RateLimiter.layer.pipe(Layer.provideMerge(Config), Layer.provideMerge(TestDatabase)), { timeout: 120_000 })(
  "leased rate limit",
  (it) => {
    describe("two processes over one window", () => {
      it.effect("admit no more than the limit, and all but a block per process", () =>
        Effect.scoped(Effect.gen(function*() {
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
          const limiter = yield* RateLimiter
          const [busy, quiet] = [yield* insertProject, yield* insertProject]
          const big = yield* limiter.check(busy, LIMIT - 10)
          expect(big.allowed).toBe(true)
          expect(big.remaining).toBeLessThanOrEqual(10)
          expect((yield* limiter.check(busy, 11)).allowed).toBe(false)
          expect((yield* limiter.check(quiet)).allowed).toBe(true)
        }))
    })
  }
)

/** A limiter of its own (an api process) with the given limit per minute. */
const processWith = (limit: number) =>
  Effect.gen(function*() {
    const config = AppConfig.layer.pipe(
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ RATE_LIMIT_PER_MINUTE: String(limit) })))
    )
    const context = yield* Layer.build(RateLimiter.layer.pipe(Layer.provide(config)))
    return context.mapUnsafe.get(RateLimiter.key) as RateLimiter["Service"]
  })

/** Moments, each some time after the one before, with checks made at once on three processes. */
interface Plan {
  readonly startMs: number
  readonly steps: ReadonlyArray<
    { readonly afterMs: number; readonly checks: ReadonlyArray<{ readonly process: number; readonly count: number }> }
  >
}
const planOf = (maxCount: number): fc.Arbitrary<Plan> =>
  fc.record({
    startMs: fc.integer({ min: 0, max: 999 }),
    steps: fc.array(
      fc.record({
        afterMs: fc.oneof(fc.integer({ min: 0, max: 1_500 }), fc.integer({ min: 1_500, max: 25_000 })),
        checks: fc.array(fc.record({ process: fc.integer({ min: 0, max: 2 }), count: fc.integer({ min: 1, max: maxCount }) }), {
          maxLength: 12
        })
      }),
      { minLength: 5, maxLength: 40 }
    )
  })

interface Decided {
  readonly at: number
  readonly count: number
  readonly allowed: boolean
}

/**
 * Process 0 decides as /v1/track's fast path does (`checkNow`, then `check` when it cannot tell at
 * once); the others through `check` alone: both ways count in one window.
 */
const decide = (limiter: RateLimiter["Service"], process: number, key: string, count: number) =>
  Effect.suspend(() => {
    const now = process === 0 ? limiter.checkNow(key, count) : undefined
    return now ? Effect.succeed(now) : limiter.check(key, count)
  })

/** Runs a plan on three fresh limiters under a TestClock; every decision with its time. */
const runPlan = (limit: number, plan: Plan) =>
  Effect.scoped(Effect.gen(function*() {
    const processes = [yield* processWith(limit), yield* processWith(limit), yield* processWith(limit)]
    const key = randomUUID()
    let now = 1_800_000_000_000 + plan.startMs
    const decided: Array<Decided> = []
    for (const step of plan.steps) {
      now += step.afterMs
      yield* TestClock.setTime(now)
      const decisions = yield* Effect.forEach(step.checks, ({ process, count }) => decide(processes[process]!, process, key, count), {
        concurrency: "unbounded"
      })
      decisions.forEach((decision, index) => decided.push({ at: now, count: step.checks[index]!.count, allowed: decision.allowed }))
    }
    return decided
  })).pipe(Effect.provide(TestClock.layer()))

/** Requests admitted in (at - spanMs, at]. */
const admittedWithin = (decided: ReadonlyArray<Decided>, at: number, spanMs: number) =>
  decided.filter((each) => each.allowed && each.at > at - spanMs && each.at <= at).reduce((sum, each) => sum + each.count, 0)

/** Runs `runs` random plans of checks (each of at most `maxCount` requests) and holds every outcome to `expectations`. */
const everyPlan = (limit: number, maxCount: number, runs: number, expectations: (limit: number, decided: ReadonlyArray<Decided>) => void) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const run = (plan: Plan) =>
      Effect.runPromise(Effect.provideContext(runPlan(limit, plan), context as any) as Effect.Effect<Array<Decided>>)
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(planOf(maxCount), (plan) => run(plan).then((decided) => expectations(limit, decided))),
        // Shrinking replays plans against Postgres for minutes: the first counterexample is enough.
        { numRuns: runs, endOnFailure: true }
      )
    )
  })

layer(TestDatabase, { timeout: 300_000 })("sliding window", (it) => {
  it.effect("no 60 s span admits more than the limit, and a refusal is at most a second early (exact mode)", () =>
    everyPlan(20, 4, 25, (limit, decided) => {
      for (const each of decided) {
        if (each.allowed) expect(admittedWithin(decided, each.at, 60_000)).toBeLessThanOrEqual(limit)
        // Refused: the requests of the last 61 s (whole seconds) left no room for it.
        else expect(admittedWithin(decided, each.at, 61_000) + each.count).toBeGreaterThan(limit)
      }
    }))

  it.effect("a leased block is spent within LEASE_SECONDS, and counted in the window for that much longer", () =>
    Effect.scoped(Effect.gen(function*() {
      const limit = LEASED_FROM
      const [first, second] = [yield* processWith(limit), yield* processWith(limit)]
      const key = randomUUID()
      const start = 1_800_000_000_000
      yield* TestClock.setTime(start)
      // The first process leases a block for one request; the second takes what is left of the window.
      expect((yield* first.check(key)).allowed).toBe(true)
      expect((yield* second.check(key, limit - BLOCK)).allowed).toBe(true)
      expect((yield* second.check(key)).allowed).toBe(false)
      // The rest of the first block is spent a moment before it expires...
      yield* TestClock.setTime(start + LEASE_SECONDS * 1000 - 100)
      expect((yield* first.check(key, BLOCK - 1)).allowed).toBe(true)
      // ...and is gone after it.
      yield* TestClock.setTime(start + LEASE_SECONDS * 1000)
      expect((yield* first.check(key)).allowed).toBe(false)
      // 60 s after the block was counted, requests spent from it are still less than 60 s old: no room.
      yield* TestClock.setTime(start + 60_000 + 500)
      const early = yield* second.check(key, limit)
      expect(early.allowed).toBe(false)
      expect(early.retryAfterSeconds).toBe(LEASE_SECONDS)
      yield* TestClock.setTime(start + 60_000 + LEASE_SECONDS * 1000)
      expect((yield* second.check(key, limit)).allowed).toBe(true)
    })).pipe(Effect.provide(TestClock.layer())))

  it.effect("no 60 s span admits more than the limit when permits are leased in blocks", () =>
    everyPlan(LEASED_FROM, 900, 15, (limit, decided) => {
      for (const each of decided) {
        if (each.allowed) expect(admittedWithin(decided, each.at, 60_000)).toBeLessThanOrEqual(limit)
      }
    }))
})
