/** Group commit: one flush per batch of submissions; a submission's items stay together and in order. */
import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeGroupCommit } from "../../src/lib/GroupCommit.ts"

describe("makeGroupCommit", () => {
  it("hands a submission's items to one flush, in order, and each submitter its own results", async () => {
    const flushes: Array<ReadonlyArray<number>> = []
    const results = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      // The first flush waits until every submission is queued, so the rest go to the second together.
      const gate = yield* Deferred.make<void>()
      const batcher = yield* makeGroupCommit({
        flush: (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            flushes.push(items)
            if (flushes.length === 1) yield* Deferred.await(gate)
            return items.map((item) => item * 10)
          })
      })
      const first = yield* Effect.forkChild(batcher.submit(0))
      yield* Effect.yieldNow
      const all = yield* Effect.forkChild(Effect.all([
        batcher.submitAll([1, 2, 3]),
        batcher.submit(4),
        batcher.submitAll([5, 6]),
        batcher.submitAll([])
      ], { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      return [yield* Fiber.await(first), yield* Fiber.await(all)] as const
    })))
    expect(flushes).toEqual([[0], [1, 2, 3, 4, 5, 6]])
    expect(results[0]).toEqual(Exit.succeed(0))
    expect(results[1]).toEqual(Exit.succeed([[10, 20, 30], 40, [50, 60], []]))
  })

  it("cuts what was queued into flushes of at most maxBatch items, never splitting a submission", async () => {
    const flushes: Array<ReadonlyArray<number>> = []
    const results = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const batcher = yield* makeGroupCommit({
        maxBatch: 4,
        flush: (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            flushes.push(items)
            if (flushes.length === 1) yield* Deferred.await(gate)
            return items
          })
      })
      const first = yield* Effect.forkChild(batcher.submit(0))
      yield* Effect.yieldNow
      const all = yield* Effect.forkChild(Effect.all([
        batcher.submitAll([1, 2, 3]),
        batcher.submitAll([4, 5]),
        batcher.submitAll([6, 7, 8, 9, 10, 11]),
        batcher.submit(12)
      ], { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.await(first)
      return yield* Fiber.join(all)
    })))
    expect(flushes).toEqual([[0], [1, 2, 3], [4, 5], [6, 7, 8, 9, 10, 11], [12]])
    expect(results).toEqual([[1, 2, 3], [4, 5], [6, 7, 8, 9, 10, 11], 12])
  })

  it("fails every submission of a failed flush", async () => {
    const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const batcher = yield* makeGroupCommit({ flush: (_: ReadonlyArray<number>) => Effect.fail("down" as const) })
      return yield* Effect.all([Effect.exit(batcher.submitAll([1, 2])), Effect.exit(batcher.submit(3))], { concurrency: "unbounded" })
    })))
    for (const exit of outcome) expect(Exit.isFailure(exit)).toBe(true)
  })

  it("fails a submission that waited past maxWait, in flight or queued, and leaves the others' results alone", async () => {
    const started = Date.now()
    const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const stalled = yield* Deferred.make<void>()
      let flushes = 0
      const batcher = yield* makeGroupCommit({
        maxWait: { duration: "300 millis", onTimeout: () => "timed out" as const },
        // The first flush hangs until released; later ones answer at once.
        flush: (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            if (flushes++ === 0) yield* Deferred.await(stalled)
            return items
          })
      })
      const inFlight = yield* Effect.forkChild(batcher.submit(1))
      yield* Effect.yieldNow
      const queued = yield* Effect.forkChild(batcher.submit(2))
      const failedIn = yield* Fiber.await(inFlight)
      const failedQueued = yield* Fiber.await(queued)
      const waited = Date.now() - started
      yield* Deferred.succeed(stalled, undefined)
      // Afterwards the batcher works as before, and a quick answer is not failed by a later sweep.
      const later = yield* batcher.submit(3)
      yield* Effect.sleep("700 millis")
      return { failedIn, failedQueued, waited, later }
    })))
    expect(outcome.failedIn).toEqual(Exit.fail("timed out"))
    expect(outcome.failedQueued).toEqual(Exit.fail("timed out"))
    expect(outcome.waited).toBeGreaterThanOrEqual(300)
    expect(outcome.waited).toBeLessThan(300 + 250 + 200)
    expect(outcome.later).toBe(3)
  })
})
