/**
 * The per-destination pumps (src/destinations/pump.ts) in memory, with a fake store and endpoint: a
 * delivery handed over by the recording is attempted with no claim before it; at most
 * DESTINATION_CONCURRENCY attempts per destination are in flight, and a destination whose endpoint does
 * not answer holds up no other; a fast endpoint is claimed further ahead than a slow one; a queued delivery
 * whose lease would run out during its attempt is left for its lease to end.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makePumps, type PumpOptions, type Settled } from "../../src/destinations/pump.ts"
import type { AttemptOutcome, ClaimedDelivery } from "../../src/store/Destinations.ts"

const ok: AttemptOutcome = { ok: true, final: true, statusCode: 200, latencyMs: 1, excerpt: "ok", error: null, nextAttemptAt: null }

const delivery = (destinationId: string, n: number): ClaimedDelivery => ({
  id: `${destinationId}-${n}`,
  destinationId,
  contactId: null,
  url: "http://127.0.0.2/hook",
  secrets: ["whsec_x"],
  body: JSON.stringify({ n }),
  eventAt: new Date(),
  attempts: 1,
  retryUntil: new Date(Date.now() + 3_600_000),
  test: false
})

/** A fake engine around the pumps: what was claimed, attempted (each answered when the test says), settled. */
const harness = (overrides: Partial<PumpOptions> = {}) => {
  const log: Array<string> = []
  const claims: Array<{ destinationId: string; room: number }> = []
  const answers = new Map<string, (outcome: AttemptOutcome) => void>()
  const settled: Array<Settled> = []
  const backlog = new Map<string, Array<ClaimedDelivery>>()
  const pumps = makePumps({
    concurrency: 2,
    leaseMs: 40_000,
    timeoutMs: 10_000,
    claim: (destinationId, room) =>
      Effect.sync(() => {
        log.push(`claim ${destinationId}`)
        claims.push({ destinationId, room })
        return (backlog.get(destinationId) ?? []).splice(0, room)
      }),
    attempt: (claimed) => {
      log.push(`attempt ${claimed.id}`)
      return new Promise((resolve) => answers.set(claimed.id, resolve))
    },
    settle: (_, batch) => Effect.sync(() => settled.push(...batch)),
    run: (effect) => {
      Effect.runFork(effect)
    },
    ...overrides
  })
  const answer = async (id: string) => {
    answers.get(id)!(ok)
    answers.delete(id)
    await flush()
  }
  return { pumps, log, claims, answers, settled, backlog, answer }
}

const flush = () =>
  new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => new Promise<void>((resolve) => setTimeout(resolve, 0)))

describe("destination pumps", () => {
  it("attempts a delivery handed over by the recording before any claim", async () => {
    const { pumps, log } = harness()
    pumps.offer("a", [delivery("a", 1)])
    // Causality, not a clock: the attempt is the first thing that happened, with no claim (nor poll) before it.
    expect(log[0]).toBe("attempt a-1")
    await flush()
    expect(log.filter((line) => line.startsWith("claim"))).toEqual([])
  })

  it("keeps at most DESTINATION_CONCURRENCY attempts in flight per destination; one that never answers holds up no other", async () => {
    const { pumps, answers, answer, settled } = harness()
    pumps.offer("dead", [1, 2, 3, 4].map((n) => delivery("dead", n)))
    pumps.offer("live", [1, 2, 3].map((n) => delivery("live", n)))
    await flush()
    expect([...answers.keys()].sort()).toEqual(["dead-1", "dead-2", "live-1", "live-2"])
    await answer("live-1")
    expect(answers.has("live-3")).toBe(true)
    expect(answers.has("dead-3")).toBe(false)
    await answer("live-2")
    await answer("live-3")
    expect(settled.map(({ delivery }) => delivery.id)).toEqual(["live-1", "live-2", "live-3"])
    await answer("dead-1")
    expect(answers.has("dead-3")).toBe(true)
  })

  it("claims further ahead for a fast endpoint than a slow one's slot's worth", async () => {
    const { pumps, claims, backlog, answers } = harness()
    // Nothing known yet: one slot's worth ahead (2 in flight + 2 queued).
    expect(pumps.room("fast")).toBe(4)
    backlog.set("fast", Array.from({ length: 200 }, (_, n) => delivery("fast", n)))
    pumps.wake("fast")
    // The endpoint answers at once: each answer teaches the pump it is fast.
    for (let round = 0; round < 200 && answers.size > 0; round++) {
      for (const [, resolve] of [...answers]) resolve(ok)
      answers.clear()
      await flush()
    }
    expect(Math.max(...claims.map((claim) => claim.room))).toBeGreaterThan(4)
    expect(pumps.room("fast")).toBeGreaterThan(4)
    // A destination with no answers yet keeps the slot's worth.
    expect(pumps.room("slow")).toBe(4)
  })

  it("does not start a queued delivery whose lease would run out during its attempt", async () => {
    const { pumps, log } = harness({ leaseMs: 10_500, timeoutMs: 10_000 })
    pumps.offer("a", [delivery("a", 1)])
    await flush()
    expect(log.filter((line) => line.startsWith("attempt"))).toEqual([])
  })
})
