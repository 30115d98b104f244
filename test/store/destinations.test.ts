/**
 * The Destinations repository at the layer level (real migrated Postgres, no services): a contact's
 * deliveries are claimable one at a time, in recorded order, whatever the batches; a repeat records
 * nothing; a replay puts the earliest first again; finished deliveries past the retention are pruned.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { type ClaimedDelivery, Destinations, type NewDelivery } from "../../src/store/Destinations.ts"
import { insertProject, TestDatabase } from "../support/database.ts"

const Repository = Destinations.layer.pipe(Layer.provideMerge(TestDatabase))
const later = new Date(Date.now() + 3_600_000)
const ok = { ok: true, final: true, statusCode: 200, latencyMs: 5, excerpt: "ok", error: null, nextAttemptAt: null } as const

/** Event `${prefix}${n}` of a contact (or none) for a destination, its body `{ n }`. */
const newDelivery = (
  to: { projectId: string; destinationId: string },
  prefix: string,
  contactId: string | null,
  n: number
): NewDelivery => ({
  ...to,
  eventId: `${prefix}${n}`,
  eventType: "x",
  contactId,
  body: JSON.stringify({ n }),
  eventAt: new Date().toISOString()
})

/** The `n` of each claimed delivery's body, in claim order. */
const bodies = (claimed: ReadonlyArray<ClaimedDelivery>) => claimed.map((one) => JSON.parse(one.body).n)

layer(Repository)("Destinations", (it) => {
  describe("claims", () => {
    it.effect("one open delivery per contact at a time, in order; repeats record nothing; replays go first again", () =>
      Effect.gen(function*() {
        const store = yield* Destinations
        const projectId = yield* insertProject
        const destination = yield* store.create(projectId, { url: "https://example.com/h", events: ["*"] })
        const [a, b] = [uuidv7(), uuidv7()]
        const event = (contactId: string | null, n: number) => newDelivery({ projectId, destinationId: destination.id }, "e", contactId, n)
        expect(yield* store.record([event(a, 1), event(b, 2), event(a, 3)], later)).toEqual([destination.id])
        yield* store.record([event(a, 4), event(null, 5), event(a, 1)], later)
        const first = yield* store.claim(destination.id, 10, 60_000)
        expect(bodies(first)).toEqual([1, 2, 5])
        expect(yield* store.claim(destination.id, 10, 60_000)).toEqual([])
        for (const delivery of first) yield* store.settle(delivery, ok, 0)
        const second = yield* store.claim(destination.id, 10, 60_000)
        expect(bodies(second)).toEqual([3])
        // A failure keeps the contact's later deliveries waiting.
        yield* store.settle(second[0]!, { ...ok, ok: false, final: false, error: "HTTP 500", nextAttemptAt: new Date(Date.now() - 1) }, 0)
        const retried = yield* store.claim(destination.id, 10, 60_000)
        expect(bodies(retried)).toEqual([3])
        yield* store.settle(retried[0]!, ok, 0)
        const fourth = yield* store.claim(destination.id, 10, 60_000)
        expect(bodies(fourth)).toEqual([4])
        // A replay of the first while the fourth is open: the first is the contact's head again.
        yield* store.replay(projectId, destination.id, { id: first[0]!.id }, later)
        yield* store.settle(fourth[0]!, ok, 0)
        const replayed = yield* store.claim(destination.id, 10, 60_000)
        expect(bodies(replayed)).toEqual([1])
        expect(replayed[0]!.id).toBe(first[0]!.id)
      }))
  })

  it.effect("concurrent recordings (several workers) and settlements keep exactly one ready delivery per contact, in recorded order", () =>
    Effect.gen(function*() {
      const store = yield* Destinations
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* insertProject
      const destination = yield* store.create(projectId, { url: "https://example.com/h", events: ["*"] })
      const contact = uuidv7()
      const event = (n: number) => newDelivery({ projectId, destinationId: destination.id }, "c", contact, n)
      const elsewhere = yield* store.create(projectId, { url: "https://example.com/h2", events: ["*"] })
      const readyCount = (contactId = contact) =>
        Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM destination_deliveries
            WHERE contact_id = ${contactId} AND ready AND status IN ('pending', 'failed')`,
          (rows) => rows[0]!.n
        )
      // Transactions recording one contact's deliveries at the same moment, as workers sharing the consumer do.
      for (let round = 0; round < 10; round++) {
        const other = uuidv7()
        yield* Effect.all(
          Array.from(
            { length: 4 },
            (_, n) => store.record([{ ...event(100 + round * 4 + n), destinationId: elsewhere.id, contactId: other }], later)
          ),
          { concurrency: "unbounded" }
        )
        expect(yield* readyCount(other)).toBe(1)
      }
      yield* Effect.all(Array.from({ length: 8 }, (_, n) => store.record([event(n)], later)), { concurrency: "unbounded" })
      expect(yield* readyCount()).toBe(1)
      // Settling the head while the contact's next deliveries are being recorded: the next one is always made ready.
      const delivered: Array<number> = []
      let n = 8
      for (let round = 0; round < 30; round++) {
        const [head, ...more] = yield* store.claim(destination.id, 10, 60_000)
        expect(more).toEqual([])
        expect(head).toBeDefined()
        delivered.push(JSON.parse(head!.body).n)
        yield* Effect.all([store.settle(head!, ok, 0), store.record([event(n++), event(n++)], later)], { concurrency: "unbounded" })
        expect(yield* readyCount()).toBe(1)
      }
      const order = yield* sql<{ n: number }>`SELECT (payload #>> '{}')::jsonb->'n' AS n FROM destination_deliveries
        WHERE destination_id = ${destination.id} ORDER BY seq`
      expect(delivered).toEqual(order.slice(0, delivered.length).map((row) => Number(row.n)))
    }))

  it.effect("settles a batch of outcomes in one statement: promotions per contact, retries kept, the run of failures in order", () =>
    Effect.gen(function*() {
      const store = yield* Destinations
      const projectId = yield* insertProject
      const destination = yield* store.create(projectId, { url: "https://example.com/h", events: ["*"] })
      const [a, b] = [uuidv7(), uuidv7()]
      const event = (contactId: string | null, n: number) => newDelivery({ projectId, destinationId: destination.id }, "b", contactId, n)
      yield* store.record([event(a, 1), event(b, 2), event(null, 3), event(a, 4), event(b, 5)], later)
      const heads = yield* store.claim(destination.id, 10, 60_000)
      expect(bodies(heads)).toEqual([1, 2, 3])
      const failed = { ...ok, ok: false, final: false, statusCode: 500, error: "HTTP 500", nextAttemptAt: new Date(Date.now() + 60_000) }
      const byN = (n: number) => heads.find((delivery) => JSON.parse(delivery.body).n === n)!
      expect(
        yield* store.settleMany(destination.id, [
          { delivery: byN(2), outcome: failed },
          { delivery: byN(1), outcome: ok },
          { delivery: byN(3), outcome: ok }
        ], 3)
      ).toBe(false)
      // a's next is ready; b's first waits for its retry, and b's second behind it.
      const next = yield* store.claim(destination.id, 10, 60_000)
      expect(bodies(next)).toEqual([4])
      expect((yield* store.get(projectId, destination.id))!.consecutiveFailures).toBe(0)
      // Two failures after the last success make a run of two; a third disables (DISABLE_AFTER 3).
      expect(yield* store.settleMany(destination.id, [{ delivery: next[0]!, outcome: ok }, { delivery: next[0]!, outcome: failed }], 3))
        .toBe(false)
      expect(yield* store.settleMany(destination.id, [{ delivery: next[0]!, outcome: failed }], 3)).toBe(false)
      expect(yield* store.settleMany(destination.id, [{ delivery: next[0]!, outcome: failed }], 3)).toBe(true)
      const disabled = (yield* store.get(projectId, destination.id))!
      expect(disabled).toMatchObject({ enabled: false, disabledReason: "failures", consecutiveFailures: 3 })
    }))

  it.effect("records deliveries claimed for the recorder, up to its room per destination, each contact's earliest only", () =>
    Effect.gen(function*() {
      const store = yield* Destinations
      const projectId = yield* insertProject
      const one = yield* store.create(projectId, { url: "https://example.com/one", events: ["*"] })
      const two = yield* store.create(projectId, { url: "https://example.com/two", events: ["*"] })
      const [a, b, c] = [uuidv7(), uuidv7(), uuidv7()]
      const event = (destinationId: string, contactId: string | null, n: number) =>
        newDelivery({ projectId, destinationId }, "r", contactId, n)
      // a's second waits behind its first; room for two of one's three ready ones, none for two's.
      const done = yield* store.recordAndClaim(
        [event(one.id, a, 1), event(one.id, a, 2), event(one.id, b, 3), event(one.id, null, 4), event(two.id, c, 5)],
        later,
        new Map([[one.id, 2]]),
        60_000
      )
      expect(bodies(done.claimed)).toEqual([1, 3])
      expect(done.claimed[0]).toMatchObject({
        destinationId: one.id,
        contactId: a,
        url: "https://example.com/one",
        attempts: 1,
        test: false
      })
      expect(done.claimed[0]!.secrets).toHaveLength(1)
      expect([...done.recorded].sort()).toEqual([one.id, two.id].sort())
      expect([...done.waiting].sort()).toEqual([one.id, two.id].sort())
      // The claimed ones are leased: a claim gets the ready ones left.
      expect(bodies(yield* store.claim(one.id, 10, 60_000))).toEqual([4])
      expect(bodies(yield* store.claim(two.id, 10, 60_000))).toEqual([5])
      // Settling a claimed one hands its contact's next over; a repeat records (and claims) nothing.
      yield* store.settle(done.claimed[0]!, ok, 0)
      const again = yield* store.recordAndClaim([event(one.id, a, 1), event(one.id, a, 6)], later, new Map([[one.id, 5]]), 60_000)
      expect(bodies(again.claimed)).toEqual([])
      expect(again.recorded).toEqual([one.id])
      expect(bodies(yield* store.claim(one.id, 10, 60_000))).toEqual([2])
    }))

  it.effect("prunes finished deliveries past the retention, never open ones", () =>
    Effect.gen(function*() {
      const store = yield* Destinations
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* insertProject
      const destination = yield* store.create(projectId, { url: "https://example.com/h", events: ["*"] })
      yield* store.record([1, 2, 3].map((n) => newDelivery({ projectId, destinationId: destination.id }, "p", null, n)), later)
      const claimed = yield* store.claim(destination.id, 2, 60_000)
      for (const delivery of claimed) yield* store.settle(delivery, ok, 0)
      yield* sql`UPDATE destination_deliveries SET created_at = now() - interval '20 days' WHERE destination_id = ${destination.id}`
      expect(yield* store.prune(14, 100)).toBe(2)
      const left = yield* sql<{ status: string }>`SELECT status FROM destination_deliveries WHERE destination_id = ${destination.id}`
      expect(left.map((row) => row.status)).toEqual(["pending"])
    }))
})
