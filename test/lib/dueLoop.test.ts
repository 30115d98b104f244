/**
 * The scheduler the worker's timers, campaigns and sweeps run on (src/lib/dueLoop.ts), on the real
 * clock with short times: a round at the due time it was told of, with no wake-up; at once when woken
 * and something is due; rounds `gap` apart however often it is woken; only `atMost` with nothing due.
 */
import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeWakeup, runWhenDue, type Wakeup } from "../../src/lib/dueLoop.ts"

/** Runs a loop whose next due time is `dueAt` (epoch ms, or undefined), recording when its rounds started. */
const scenario = async (
  options: { gap: number; atMost: number; dueAt: () => number | undefined; fired?: () => void },
  drive: (wakeup: Wakeup, rounds: Array<number>) => Promise<void>
) => {
  const rounds: Array<number> = []
  const wakeup = await Effect.runPromise(makeWakeup)
  const fiber = Effect.runFork(runWhenDue({
    name: "test",
    wakeup,
    gap: options.gap,
    atMost: options.atMost,
    round: Effect.sync(() => {
      rounds.push(Date.now())
      const due = options.dueAt()
      if (due !== undefined && due <= Date.now()) options.fired?.()
      return false
    }),
    nextDueIn: Effect.sync(() => {
      const due = options.dueAt()
      return due === undefined ? undefined : due - Date.now()
    })
  }))
  try {
    await drive(wakeup, rounds)
  } finally {
    await Effect.runPromise(Fiber.interrupt(fiber))
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `done` every 10 ms until it holds or `within` ms passed. */
const until = async (done: () => boolean, within: number) => {
  const deadline = Date.now() + within
  while (!done() && Date.now() < deadline) await sleep(10)
}

describe("runWhenDue", () => {
  it("runs a round at the next due time, without being woken, and not before", async () => {
    const dueAt = Date.now() + 400
    await scenario({ gap: 20, atMost: 10_000, dueAt: () => dueAt }, async (_, rounds) => {
      await sleep(700)
      const after = rounds.filter((at) => at >= dueAt)
      expect(rounds.filter((at) => at > rounds[0]! && at < dueAt)).toEqual([])
      expect(after.length).toBeGreaterThan(0)
      expect(after[0]! - dueAt).toBeLessThan(150)
    })
  })

  it("sleeps `atMost` when nothing is scheduled, and a wake-up makes it look at once", async () => {
    let dueAt: number | undefined
    const fired = () => (dueAt = undefined)
    // atMost is long next to how late a loaded machine runs a timer, so "at once" and "the safety net"
    // cannot be mistaken for each other.
    await scenario({ gap: 20, atMost: 3_000, dueAt: () => dueAt, fired }, async (wakeup, rounds) => {
      await sleep(300)
      expect(rounds).toHaveLength(1)
      dueAt = Date.now()
      const wokenAt = Date.now()
      await Effect.runPromise(wakeup.signal)
      await until(() => rounds.length >= 2, 2_500)
      expect(rounds).toHaveLength(2)
      expect(rounds[1]! - wokenAt).toBeLessThan(1_000)
      // The safety net: one more round `atMost` after the last, not before.
      await until(() => rounds.length >= 3, 6_000)
      expect(rounds).toHaveLength(3)
      expect(rounds[2]! - rounds[1]!).toBeGreaterThanOrEqual(2_900)
    })
  }, 15_000)

  it("keeps rounds `gap` apart under a storm of wake-ups", async () => {
    await scenario({ gap: 100, atMost: 10_000, dueAt: () => undefined }, async (wakeup, rounds) => {
      const until = Date.now() + 600
      while (Date.now() < until) {
        await Effect.runPromise(wakeup.signal)
        await sleep(5)
      }
      expect(rounds.length).toBeGreaterThanOrEqual(4)
      expect(rounds.length).toBeLessThanOrEqual(8)
      // Date.now() is whole milliseconds and timers run on a finer monotonic clock: a gap measured
      // this way can read up to 2 ms short (98 ms was seen under a full suite).
      for (let i = 1; i < rounds.length; i++) expect(rounds[i]! - rounds[i - 1]!).toBeGreaterThanOrEqual(98)
    })
  })
})
