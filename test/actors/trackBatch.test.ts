/**
 * A batch of tracked events is applied in one write (src/actors/trackBatch.ts): its contacts' facts are
 * read with the head, folded and evaluated in memory. Here the same batches go to two projects with the
 * same segments, one through that path and one statement by statement (the actor's general path, taken
 * when its segments are not loaded), and every row they leave must be the same: contacts, events and
 * their aggregates, memberships (with exits), lane counts, timers, and the entry/exit and subscription
 * events emitted. The segments cover data fields, time windows (timers), windowed counts, a segment of a
 * segment, and segments over the batch's own emitted events (several rounds deep).
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { applyBatch } from "../../src/actors/applyBatch.ts"
import { reloadSegments } from "../../src/actors/laneSegments.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { batchesFor, BatchRuntime, createContacts, createSegments, laneContext, leaseFor, snapshot } from "../support/actorFixtures.ts"
import { insertProject } from "../support/database.ts"

const LANE = 0
const PARTITION = 7

layer(BatchRuntime, { timeout: 120_000 })("a batch of tracked events in one write", (it) => {
  describe("against the statement-by-statement path", () => {
    it.effect("leaves the same contacts, events, aggregates, memberships, counts, timers and emitted events", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const runtime = yield* WorkflowRuntime
        yield* leaseFor(PARTITION)
        const base = Date.now() - 60 * 60_000
        const run = (oneWrite: boolean) =>
          Effect.gen(function*() {
            const projectId = yield* insertProject
            yield* createSegments(projectId)
            const contacts = yield* createContacts(projectId, outbox.lanes.count, LANE)
            const context = laneContext({ projectId, lane: LANE, partition: PARTITION }, outbox, runtime)
            const paths: Array<boolean> = []
            for (const [index, batch] of batchesFor(projectId, contacts, base, { lane: LANE, partition: PARTITION }).entries()) {
              // Segments are evaluated at the Clock: the same instants in both runs, one second apart per
              // batch, so entry and exit times tell which batch made them.
              yield* TestClock.setTime(base + 61 * 60_000 + index * 1000)
              // The general path is the one an actor takes with its segments not loaded (it loads them itself).
              if (oneWrite) yield* reloadSegments(context, context.segmentState)
              else context.segmentState.segments = undefined
              const outcome = yield* applyBatch(context, batch)
              paths.push(outcome.appliedInOneWrite === true)
            }
            return { paths, snapshot: yield* snapshot(projectId) }
          })
        const oneWrite = yield* run(true)
        const general = yield* run(false)
        expect(oneWrite.paths.every(Boolean)).toBe(true)
        expect(general.paths.some(Boolean)).toBe(false)
        expect(oneWrite.snapshot).toEqual(general.snapshot)

        // And the runs did what the segments are for (so the comparison is not between two empty results).
        const { memberships, out, ownEvents, events, laneOffset, timers } = oneWrite.snapshot
        const names = new Set(out.map((event) => event.name))
        for (const name of ["big-spenders", "subscribed-big", "entered-big", "twice-entered", "frequent", "recent-buyers"]) {
          assert(names.has(`segment.${name}.entry`), `segment.${name}.entry emitted`)
        }
        assert(names.has("segment.big-spenders.exit"))
        assert(names.has("contact.unsubscribed") && names.has("contact.subscribed"))
        expect(memberships.some((row) => row.exited_at !== null)).toBe(true)
        expect(ownEvents.length).toBeGreaterThan(0)
        expect(timers.length).toBeGreaterThan(0)
        // 10 batches × 3 messages × 6 events, the re-split event stored once.
        expect(events.length).toBe(180)
        expect(laneOffset).toEqual([{ applied_seq: 30, ingest_pos: expect.any(String) }])
      }).pipe(Effect.provide(TestClock.layer())))
  })
})
