/**
 * The worker's delivery budget (src/actors/deliveryBudget.ts): a message waits until its events fit,
 * and its events go back when it is acked or its partition run stops; a redelivered copy is held once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeDeliveryBudget } from "../../src/actors/deliveryBudget.ts"
import type { Delivered } from "../../src/actors/messages.ts"
import { PartitionRun } from "../../src/actors/partitionRun.ts"

const tracked = (seq: number, events: number): Delivered => ({
  seq,
  partition: 3,
  lane: 0,
  body: {
    kind: "track",
    projectId: "p",
    events: Array.from({ length: events }, (_, i) => ({
      eventId: `${seq}-${i}`,
      contactId: "c",
      email: "a@b.c",
      name: "e",
      subscribed: null,
      set: {},
      remove: [],
      data: {},
      at: ""
    }))
  }
})

describe("delivery budget", () => {
  it.effect("holds a message back until its events fit, and gives them back on ack and when the run stops", () =>
    Effect.gen(function*() {
      const budget = yield* makeDeliveryBudget(10)
      const run = new PartitionRun(3, 1, 0)
      yield* budget.take(run, tracked(1, 6))
      yield* budget.take(run, tracked(2, 4))
      const third = yield* Effect.forkChild(budget.take(run, tracked(3, 3)))
      yield* Effect.yieldNow
      expect(third.pollUnsafe()).toBeUndefined()
      yield* budget.release(run, 1)
      yield* Fiber.join(third)
      // Acked twice (a redelivery's ack): given back once.
      yield* budget.release(run, 1)
      const big = yield* Effect.forkChild(budget.take(run, tracked(4, 50)))
      yield* Effect.yieldNow
      expect(big.pollUnsafe()).toBeUndefined()
      // The run stops: what it held (seq 2 and 3) goes back, and a message larger than the budget fits alone.
      yield* budget.releaseRun(run)
      yield* Fiber.join(big)
      yield* budget.release(run, 4)
      // A redelivered copy on the same run holds its permits once.
      yield* budget.take(run, tracked(5, 5))
      yield* budget.take(run, tracked(5, 5))
      yield* budget.take(run, tracked(6, 5))
      yield* budget.release(run, 5)
      yield* budget.release(run, 6)
      yield* budget.take(run, tracked(7, 10))
    }))
})
