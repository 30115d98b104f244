/**
 * Several lanes' batches of tracked events in one transaction (src/actors/combinedBatch.ts) must leave
 * exactly what applying each lane's batch on its own leaves: the same batches go to two projects with the
 * same segments, one turn by turn (every lane's batch of the turn combined), one lane by lane; every row
 * they leave must be the same. And a lane the combined path cannot take is left whole to its actor.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { applyBatch } from "../../src/actors/applyBatch.ts"
import type { BatchContext, BatchOutcome } from "../../src/actors/batchContext.ts"
import { reloadSegments } from "../../src/actors/laneSegments.ts"
import { applyCombined, combinable } from "../../src/actors/combinedBatch.ts"
import type { Delivered } from "../../src/actors/messages.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { pgArray } from "../../src/lib/pgArray.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import {
  batchesFor,
  BatchRuntime,
  createContacts,
  createSegments,
  leaseFor,
  prng,
  snapshot,
  laneContext
} from "../support/actorFixtures.ts"
import { insertProject } from "../support/database.ts"

const LANES = [0, 3, 5, 12]

/** A project with the test segments, contacts in each of LANES, and an actor context per lane (segments loaded). */
const laneProject = Effect.gen(function*() {
  const outbox = yield* Outbox
  const runtime = yield* WorkflowRuntime
  const projectId = yield* insertProject
  yield* createSegments(projectId)
  const lanes = []
  for (const lane of LANES) {
    const partition = outbox.lanes.partitionOf(projectId, lane)
    yield* leaseFor(partition)
    const contacts = yield* createContacts(projectId, outbox.lanes.count, lane, 6)
    const context = laneContext({ projectId, lane, partition }, outbox, runtime)
    yield* reloadSegments(context, context.segmentState)
    lanes.push({ lane, partition, contacts, context })
  }
  return { projectId, lanes }
})

/**
 * One turn of the lanes' batches: applied together (each must be combinable, and every lane taken) or each
 * lane on its own; the lanes' outcomes, in order.
 */
const applyTurn = (
  lanes: ReadonlyArray<{ readonly context: BatchContext }>,
  batches: ReadonlyArray<ReadonlyArray<ReadonlyArray<Delivered>>>,
  turn: number,
  combined: boolean
) =>
  Effect.gen(function*() {
    if (!combined) return yield* Effect.forEach(lanes, ({ context }, index) => applyBatch(context, batches[index]![turn]!))
    const turnLanes = lanes.map(({ context }, index) => ({ context, batch: batches[index]![turn]! }))
    for (const { context, batch } of turnLanes) assert(combinable(context, batch))
    const outcomes = yield* applyCombined(turnLanes)
    return outcomes.map((outcome): BatchOutcome => {
      assert(outcome !== undefined, "every lane taken")
      return outcome
    })
  })

layer(BatchRuntime, { timeout: 120_000 })("lane batches combined in one transaction", (it) => {
  describe("against each lane on its own", () => {
    it.effect("leaves the same contacts, events, aggregates, memberships, counts, timers, emitted events and offsets", () =>
      Effect.gen(function*() {
        const base = Date.now() - 60 * 60_000
        const run = (combined: boolean) =>
          Effect.gen(function*() {
            const { projectId, lanes } = yield* laneProject
            const batches = lanes.map(({ lane, partition, contacts }, index) =>
              batchesFor(projectId, contacts, base, { lane, partition, seed: 42 + index, batches: 8 })
            )
            let combinedLanes = 0
            for (let turn = 0; turn < 8; turn++) {
              yield* TestClock.setTime(base + 61 * 60_000 + turn * 1000)
              for (const outcome of yield* applyTurn(lanes, batches, turn, combined)) {
                if (combined && outcome.applied > 0) combinedLanes++
                if (!combined) assert(outcome.appliedInOneWrite, "each lane in one write")
              }
            }
            return { combinedLanes, snapshot: yield* snapshot(projectId) }
          })
        const combined = yield* run(true)
        const alone = yield* run(false)
        expect(combined.combinedLanes).toBe(LANES.length * 8)
        expect(combined.snapshot).toEqual(alone.snapshot)
        // The comparison is not between two empty results.
        const { memberships, out, events, laneOffset, timers } = combined.snapshot
        expect(new Set(out.map((event) => event.name))).toContain("segment.big-spenders.entry")
        expect(new Set(out.map((event) => event.name))).toContain("segment.big-spenders.exit")
        expect(memberships.length).toBeGreaterThan(0)
        expect(timers.length).toBeGreaterThan(0)
        // 8 batches × 3 messages × 6 events per lane, the re-split events stored once.
        expect(events.length).toBe(LANES.length * 8 * 18)
        expect(laneOffset).toHaveLength(LANES.length)
        for (const row of laneOffset) expect(row.applied_seq).toBe(24)
      }).pipe(Effect.provide(TestClock.layer())))
  })

  describe("events emitted elsewhere, the api's contact writes and queued-mail notes, with the tracked events", () => {
    it.effect("leave what each lane's batch applied statement by statement leaves", () =>
      Effect.gen(function*() {
        const base = Date.now() - 60 * 60_000
        /** The tracked batches with, after each one's messages, an email.sent event, a contact write and (lane 0) a mail note. */
        const mixedBatches = (
          projectId: string,
          lane: { lane: number; partition: number; contacts: ReadonlyArray<{ id: string; email: string }> },
          seed: number
        ) => {
          const random = prng(seed)
          const renumber = (message: Delivered): Delivered => ({ ...message, seq: message.seq * 10 })
          /** The api's write each contact message tells of, made before its turn. */
          const writes: Array<{ id: string; n: number; subscribed: boolean }> = []
          const batches = batchesFor(projectId, lane.contacts, base, { lane: lane.lane, partition: lane.partition, seed, batches: 8 }).map(
            (batch, b) => {
              const last = Math.max(...batch.map((message) => message.seq)) * 10
              const pick = () => lane.contacts[Math.floor(random() * lane.contacts.length)]!
              const sent = pick()
              const written = pick()
              const subscribed = random() < 0.5
              writes.push({ id: written.id, n: Math.floor(random() * 1000), subscribed })
              const at = (offset: number) => new Date(base + (b * 18 + 17) * 20_000 + offset).toISOString()
              const extra: Array<Delivered["body"]> = [
                {
                  kind: "event",
                  projectId,
                  eventId: uuidv7(),
                  contactId: sent.id,
                  email: sent.email,
                  name: "email.sent",
                  data: { n: b },
                  at: at(1)
                },
                {
                  kind: "contact",
                  type: "contact.updated",
                  projectId,
                  contactId: written.id,
                  previousSubscribed: !subscribed,
                  contact: { id: written.id, email: written.email, subscribed },
                  source: "api.send",
                  at: at(2)
                },
                ...(lane.lane === 0 ? [{ kind: "email" as const, projectId, emailIds: [uuidv7()] }] : [])
              ]
              return [
                ...batch.map(renumber),
                ...extra.map((body, index) => ({ seq: last + index + 1, partition: lane.partition, lane: lane.lane, body }))
              ]
            }
          )
          return { batches, writes }
        }
        const run = (combined: boolean) =>
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const { projectId, lanes } = yield* laneProject
            const planned = lanes.map((lane, index) => mixedBatches(projectId, lane, 7 + index))
            const batches = planned.map((lane) => lane.batches)
            let mailQueued = 0
            for (let turn = 0; turn < 8; turn++) {
              yield* TestClock.setTime(base + 61 * 60_000 + turn * 1000)
              for (const { writes } of planned) {
                const write = writes[turn]!
                yield* sql`UPDATE contacts SET subscribed = ${write.subscribed}, data = data || jsonb_build_object('n', ${write.n}::int)
                           WHERE id = ${write.id}`
              }
              for (const outcome of yield* applyTurn(lanes, batches, turn, combined)) if (outcome.mailQueued) mailQueued++
            }
            return { mailQueued, snapshot: yield* snapshot(projectId) }
          })
        const combined = yield* run(true)
        const alone = yield* run(false)
        expect(combined.mailQueued).toBe(8)
        expect(alone.mailQueued).toBe(8)
        const { laneOffset: _combinedOffsets, ...combinedRows } = combined.snapshot
        const { laneOffset: _aloneOffsets, ...aloneRows } = alone.snapshot
        expect(combinedRows).toEqual(aloneRows)
        expect(combined.snapshot.laneOffset).toEqual(alone.snapshot.laneOffset)
        // Not two empty results: the emitted events stored, the contact writes' subscription events recorded.
        expect(combined.snapshot.events.filter((event) => (event as { name: string }).name === "email.sent")).toHaveLength(LANES.length * 8)
        expect(new Set(combined.snapshot.ownEvents.map((event) => (event as { name: string }).name))).toContain("contact.subscribed")
        expect(new Set(combined.snapshot.ownEvents.map((event) => (event as { name: string }).name))).toContain("contact.unsubscribed")
      }).pipe(Effect.provide(TestClock.layer())))
  })

  describe("a lane the combined path cannot take", () => {
    it.effect("is left whole (not even its offset moves) while the other lanes are applied", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { projectId, lanes } = yield* laneProject
        const base = Date.now() - 30 * 60_000
        const batchOf = (index: number) => {
          const { lane, partition, contacts } = lanes[index]!
          return batchesFor(projectId, contacts, base, { lane, partition, seed: index, batches: 1 })[0]!
        }
        const stored = (batch: ReadonlyArray<Delivered>) => {
          const ids = batch.flatMap((message) => (message.body.kind === "track" ? message.body.events.map((event) => event.eventId) : []))
          return Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE id = ANY(${pgArray(ids)}::uuid[])`, ([row]) =>
            row!.n)
        }
        const offsetOf = (lane: number) =>
          Effect.map(
            sql<{ applied_seq: string }>`SELECT applied_seq FROM lane_offsets WHERE project_id = ${projectId} AND lane = ${lane}`,
            (rows) =>
              rows.length === 0 ? 0 : Number(rows[0]!.applied_seq)
          )

        // Lane 1's partition now leased by another worker; lane 2 tracks an email with no contact (its
        // actor creates it alone); lane 3 repeats an email of lane 0 (the first lane takes it).
        yield* sql`UPDATE partition_leases SET owner = 'another-worker', epoch = 2 WHERE partition = ${lanes[1]!.partition}`
        const batches = lanes.map((_, index) => batchOf(index))
        /** The batch with its first event changed. */
        const withFirstEvent = (batch: Array<Delivered>, patch: { email: string; contactId?: string }) => {
          const [first, ...rest] = batch
          if (first?.body.kind !== "track") throw new Error("a track message first")
          const [event, ...others] = first.body.events
          return [{ ...first, body: { ...first.body, events: [{ ...event!, ...patch }, ...others] } }, ...rest]
        }
        const firstEmailOf = (batch: ReadonlyArray<Delivered>) => (batch[0]!.body.kind === "track" ? batch[0]!.body.events[0]!.email : "")
        batches[2] = withFirstEvent(batches[2]!, { email: "nobody@example.org", contactId: uuidv7() })
        batches[3] = withFirstEvent(batches[3]!, { email: firstEmailOf(batches[0]!) })
        const outcomes = yield* applyCombined(lanes.map(({ context }, index) => ({ context, batch: batches[index]! })))
        expect(outcomes.map((outcome) => outcome !== undefined)).toEqual([true, false, false, false])
        expect(yield* stored(batches[0]!)).toBe(18)
        expect(yield* offsetOf(lanes[0]!.lane)).toBe(3)
        for (const index of [1, 2, 3]) {
          expect(yield* stored(batches[index]!)).toBe(0)
          expect(yield* offsetOf(lanes[index]!.lane)).toBe(0)
        }

        // Applied again (redelivered), lane 0's messages are skipped: nothing twice.
        const again = yield* applyCombined([{ context: lanes[0]!.context, batch: batches[0]! }, {
          context: lanes[2]!.context,
          batch: batchOf(2)
        }])
        expect(again[0]).toMatchObject({ applied: 0, skipped: 3 })
        expect(again[1]).toMatchObject({ applied: 3, skipped: 0 })
        expect(yield* stored(batches[0]!)).toBe(18)
      }))
  })
})
