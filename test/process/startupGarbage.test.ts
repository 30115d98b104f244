import { Effect } from "effect"
import { getHeapStatistics } from "node:v8"
import { expect, it } from "vitest"
import { collectStartupGarbage } from "../../src/process/startupGarbage.ts"

it("collects the heap's garbage at once, without --expose-gc", () => {
  // Garbage as start-up leaves it: tens of MiB no longer referenced, not yet collected.
  let garbage: Array<Array<number>> | undefined = Array.from({ length: 200 }, () => Array.from({ length: 20_000 }, (_, i) => i))
  const withGarbage = getHeapStatistics().used_heap_size
  garbage = undefined
  Effect.runSync(collectStartupGarbage)
  const after = getHeapStatistics().used_heap_size
  expect(garbage).toBeUndefined()
  expect(withGarbage - after).toBeGreaterThan(20 * 2 ** 20)
})
