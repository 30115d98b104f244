/**
 * The facts a worker keeps of its lanes' contacts (src/actors/laneFacts.ts) can never be served stale:
 * the same steps run twice on fresh projects, once with the cache and once without (capacity 0, every
 * head reads every fact), and after every step both leave exactly the same rows. The steps are what can
 * change a lane's facts outside its combined turns: email events applied on their own, DELETE
 * /events/:name, a contact deleted, a segment edited (reload and backfill), a project reset, the lane
 * taken over by a new actor, messages redelivered; between them, combined turns of tracked events.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { applyBatch } from "../../src/actors/applyBatch.ts"
import type { BatchContext } from "../../src/actors/batchContext.ts"
import { applyBackfillChunk, reloadSegments } from "../../src/actors/laneSegments.ts"
import { applyCombined } from "../../src/actors/combinedBatch.ts"
import { makeFactsCache } from "../../src/actors/laneFacts.ts"
import type { Delivered } from "../../src/actors/messages.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Segments } from "../../src/store/Segments.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { INGEST_POSITIONS, type TrackedEvent } from "../../src/stream/messages.ts"
import { newWorkflowState } from "../../src/workflows/engine.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { BatchRuntime, createContacts, createSegments, leaseFor, one, prng, snapshot, TEST_WORKER } from "../support/actorFixtures.ts"
import { insertProject } from "../support/database.ts"

const LANES = [1, 6, 11]
const STEPS = 60

type Step = "track" | "emailEvent" | "deleteEvents" | "contactDeleted" | "segmentEdited" | "reset" | "takeover" | "redelivered"

/** The steps, the same for both runs: mostly tracked turns, each other kind several times. */
const plan = (() => {
  const random = prng(2024)
  const others: Array<Step> = ["emailEvent", "deleteEvents", "contactDeleted", "segmentEdited", "reset", "takeover", "redelivered"]
  const steps: Array<Step> = []
  for (let i = 0; i < STEPS; i++) steps.push(i % 3 === 2 ? others[Math.floor(random() * others.length)]! : "track")
  // Each kind at least once.
  for (const [index, step] of others.entries()) steps[3 * index + 2] = step
  return steps
})()

const run = (capacity: number, base: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    const runtime = yield* WorkflowRuntime
    const segmentsRepo = yield* Segments
    const cache = makeFactsCache(capacity)
    const random = prng(99)
    const projectId = yield* insertProject
    const { big } = yield* createSegments(projectId)
    // One stream: sequences and ingest envelopes grow across lanes, as in stream IN.
    let seq = 0
    interface Lane {
      readonly lane: number
      readonly partition: number
      epoch: number
      readonly contacts: Array<{ id: string; email: string }>
      context: BatchContext
      readonly sent: Array<Array<Delivered>>
    }
    const lanes: Array<Lane> = []
    for (const lane of LANES) {
      const partition = outbox.lanes.partitionOf(projectId, lane)
      yield* leaseFor(partition)
      const contacts = yield* createContacts(projectId, outbox.lanes.count, lane, 5)
      lanes.push({ lane, partition, epoch: 1, contacts, context: undefined as unknown as BatchContext, sent: [] })
    }
    /** A new actor for the lane: its segments loaded afresh, its kept facts empty. */
    const newActor = (entry: Lane) =>
      Effect.gen(function*() {
        entry.context = {
          projectId,
          lane: entry.lane,
          partition: entry.partition,
          epoch: entry.epoch,
          workerId: TEST_WORKER,
          outbox,
          segmentState: { segments: undefined, backfills: [], facts: cache.lane() },
          workflows: { runtime, state: newWorkflowState() }
        }
        yield* reloadSegments(entry.context, entry.context.segmentState)
      })
    for (const entry of lanes) yield* newActor(entry)
    const message = (entry: Lane, body: Delivered["body"]): Delivered => ({
      seq: ++seq,
      partition: entry.partition,
      lane: entry.lane,
      body
    })
    /** Applies one message on its own (the actor's general path), then whatever backfills it left, as the actor would. */
    const alone = (entry: Lane, body: Delivered["body"]) =>
      Effect.gen(function*() {
        yield* applyBatch(entry.context, [message(entry, body)])
        while (entry.context.segmentState.backfills.length > 0) yield* applyBackfillChunk(entry.context)
      })
    const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString()

    let hits = 0
    const snapshots = []
    for (const [index, step] of plan.entries()) {
      yield* TestClock.setTime(base + 60 * 60_000 + index * 30_000)
      const clock = index / 2 + 1
      switch (step) {
        case "track": {
          const turn = lanes.map((entry) => {
            const batch: Array<Delivered> = []
            for (let m = 0; m < 2; m++) {
              const events: Array<TrackedEvent> = []
              const envelope = seq + 1
              for (let i = 0; i < 4; i++) {
                const contact = entry.contacts[Math.floor(random() * entry.contacts.length)]!
                const roll = random()
                events.push({
                  eventId: uuidv7(),
                  contactId: contact.id,
                  email: contact.email,
                  name: roll < 0.5 ? "page_view" : roll < 0.8 ? "purchase" : "click",
                  subscribed: random() < 0.1 ? random() < 0.5 : null,
                  set: random() < 0.5 ? { n: Math.floor(random() * 1000) } : {},
                  remove: [],
                  data: { index },
                  at: at(clock - 0.2 + i * 0.05),
                  pos: envelope * INGEST_POSITIONS + i
                })
              }
              batch.push(message(entry, { kind: "track", projectId, events }))
            }
            entry.sent.push(batch)
            return { context: entry.context, batch }
          })
          // What the turn's lanes kept, before the turn uses it.
          for (const { context, batch } of turn) {
            for (const delivered of batch) {
              if (delivered.body.kind !== "track") continue
              for (const event of delivered.body.events) if (context.segmentState.facts?.get(event.contactId)) hits++
            }
          }
          const outcomes = yield* applyCombined(turn).pipe(Effect.orElseSucceed(() => turn.map(() => undefined)))
          // A lane left out (or a turn given up) is applied alone, as its actor does.
          for (const [i, outcome] of outcomes.entries()) if (outcome === undefined) yield* applyBatch(turn[i]!.context, turn[i]!.batch)
          break
        }
        case "emailEvent": {
          // The sender's events come back to the lane as `event` messages: counted in the aggregates.
          const entry = lanes[Math.floor(random() * lanes.length)]!
          const contact = entry.contacts[0]!
          yield* alone(entry, {
            kind: "event",
            projectId,
            eventId: uuidv7(),
            contactId: contact.id,
            email: contact.email,
            name: "purchase",
            data: {},
            at: at(clock)
          })
          break
        }
        case "deleteEvents": {
          for (const entry of lanes) {
            yield* alone(entry, {
              kind: "command",
              projectId,
              commandId: uuidv7(),
              type: "deleteEvents",
              name: "purchase",
              pos: (seq + 1) * INGEST_POSITIONS
            })
          }
          break
        }
        case "contactDeleted": {
          // The api deletes the row, then tells the contact's lane.
          const entry = lanes[Math.floor(random() * lanes.length)]!
          if (entry.contacts.length < 2) break
          const contact = entry.contacts.pop()!
          yield* sql`DELETE FROM contacts WHERE id = ${contact.id}`
          yield* alone(entry, {
            kind: "contact",
            type: "contact.deleted",
            projectId,
            contactId: contact.id,
            contact: { id: contact.id, email: contact.email, subscribed: true },
            at: at(clock)
          })
          break
        }
        case "segmentEdited": {
          const threshold = 100 + Math.floor(random() * 800)
          yield* segmentsRepo.update(projectId, big.id, { condition: one({ field: "data.n", operator: "greaterThan", value: threshold }) })
          for (const entry of lanes) yield* alone(entry, { kind: "command", projectId, commandId: uuidv7(), type: "segmentsChanged" })
          break
        }
        case "reset": {
          // What a reset leaves that the cache could contradict: no events, aggregates or memberships, the
          // watermark past everything queued (contacts and segments kept here, so their facts could be hit).
          yield* sql`DELETE FROM events WHERE project_id = ${projectId}`
          yield* sql`DELETE FROM event_aggregates WHERE project_id = ${projectId}`
          yield* sql`DELETE FROM segment_memberships WHERE project_id = ${projectId}`
          yield* sql`DELETE FROM segment_counts WHERE segment_id IN (SELECT id FROM segments WHERE project_id = ${projectId})`
          yield* sql`DELETE FROM timers WHERE project_id = ${projectId}`
          yield* sql`UPDATE projects SET data_reset_seq = ${seq} WHERE id = ${projectId}`
          break
        }
        case "takeover": {
          const entry = lanes[Math.floor(random() * lanes.length)]!
          entry.epoch++
          yield* sql`UPDATE partition_leases SET epoch = ${entry.epoch} WHERE partition = ${entry.partition}`
          yield* newActor(entry)
          break
        }
        case "redelivered": {
          const turn = lanes.filter((entry) => entry.sent.length > 0).map((entry) => ({
            context: entry.context,
            batch: entry.sent.at(-1)!
          }))
          if (turn.length === 0) break
          const outcomes = yield* applyCombined(turn)
          for (const outcome of outcomes) if (outcome !== undefined) expect(outcome.applied).toBe(0)
          break
        }
      }
      snapshots.push({ step, index, rows: yield* snapshot(projectId) })
    }
    return { hits, snapshots }
  })

layer(BatchRuntime, { timeout: 180_000 })("facts kept between turns", (it) => {
  describe("against reading every fact every time", () => {
    it.effect("leave the same rows after every step: email events, DELETE /events/:name, deletions, segment edits, resets, takeovers, redeliveries", () =>
      Effect.gen(function*() {
        const base = Date.now() - 60 * 60_000
        const kept = yield* run(10_000, base)
        const read = yield* run(0, base)
        assert(kept.hits > 100, `the cache served facts (${kept.hits} hits)`)
        expect(read.hits).toBe(0)
        for (const [index, snapshot] of kept.snapshots.entries()) {
          expect({ step: snapshot.step, index, rows: snapshot.rows }).toEqual({
            step: snapshot.step,
            index,
            rows: read.snapshots[index]!.rows
          })
        }
      }).pipe(Effect.provide(TestClock.layer())))
  })
})
