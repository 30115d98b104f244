import { Effect } from "effect"
import { getHeapStatistics } from "node:v8"
import { expect, it } from "vitest"
import { collectStartupGarbage } from "../../src/process/startupGarbage.ts"

/** Garbage as start-up leaves it: tens of MiB no longer referenced once this returns, not yet collected. */
const leaveGarbage = () => Array.from({ length: 200 }, () => Array.from({ length: 20_000 }, (_, i) => i)).length

it("collects the heap's garbage at once, without --expose-gc", () => {
  expect(leaveGarbage()).toBe(200)
  const withGarbage = getHeapStatistics().used_heap_size
  Effect.runSync(collectStartupGarbage)
  expect(withGarbage - getHeapStatistics().used_heap_size).toBeGreaterThan(20 * 2 ** 20)
})
