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
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { applyBatch, type BatchContext, reloadSegments } from "../../src/actors/applyBatch.ts"
import type { Delivered } from "../../src/actors/messages.ts"
import { AppConfig } from "../../src/config.ts"
import type { Condition } from "../../src/domain/conditions/types.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Dns } from "../../src/lib/dns.ts"
import { MailQueue } from "../../src/mail/MailQueue.ts"
import { Billing } from "../../src/store/Billing.ts"
import { Contacts } from "../../src/store/Contacts.ts"
import { Projects } from "../../src/store/Projects.ts"
import { Segments, segmentSlug } from "../../src/store/Segments.ts"
import { Templates } from "../../src/store/Templates.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import type { TrackedEvent } from "../../src/stream/messages.ts"
import { INGEST_POSITIONS } from "../../src/stream/messages.ts"
import { newWorkflowState } from "../../src/workflows/engine.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { one, prng, segmentCreator } from "../support/actorFixtures.ts"
import { insertProject, OutboxWithoutNats, TestDatabase } from "../support/database.ts"

const Base = Segments.layer.pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)
const Runtime = WorkflowRuntime.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(
    Contacts.layer,
    Templates.layer,
    Billing.layer,
    MailQueue.layer.pipe(Layer.provide(Projects.layer)),
    Dns.layer
  )),
  Layer.provideMerge(Base)
)

const CONTACTS = 12
const LANE = 0
const PARTITION = 7
const WORKER = "test-worker"

const createSegments = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const create = yield* segmentCreator(projectId)
    const big = yield* create("Big spenders", one({ field: "data.n", operator: "greaterThan", value: 500 }))
    yield* create("Recent buyers", one({ field: "event.purchase", operator: "triggeredWithin", value: 30, unit: "minutes" }))
    yield* create("Frequent", one({ field: "event.page_view", operator: "triggeredAtLeast", value: 3, within: 1, unit: "days" }))
    yield* create("Subscribed big", {
      logic: "AND",
      groups: [{ filters: [{ field: `segment.${big.id}`, operator: "memberOfSegment" }, { field: "subscribed", operator: "equals", value: true }] }]
    } as unknown as Condition)
    // Read the batch's own emitted events: recorded and evaluated in the same batch, rounds deep.
    const entered = yield* create("Entered big", one({ field: `event.segment.${segmentSlug("Big spenders")}.entry`, operator: "triggered" }))
    yield* create("Twice entered", one({ field: `event.segment.${segmentSlug("Entered big")}.entry`, operator: "triggered" }))
    // All-time counts: an event stored twice would be counted twice.
    yield* create("Clicked twice", one({ field: "event.click", operator: "triggeredAtLeast", value: 2 }))
    yield* create("Bought twice", one({ field: "event.purchase", operator: "triggeredAtLeast", value: 2 }))
    yield* create("Viewed twice", one({ field: "event.page_view", operator: "triggeredAtLeast", value: 2 }))
    yield* create("Resubscribed", one({ field: "event.contact.subscribed", operator: "triggeredAtLeast", value: 1 }))
    // As if backfilled: populated segments emit entry/exit for every change.
    yield* sql`UPDATE segments SET backfilled_version = version WHERE project_id = ${projectId}`
    return { big, entered }
  })

const leaseFor = (partition: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO partition_leases (partition, owner, epoch) VALUES (${partition}, ${WORKER}, 1)
        ON CONFLICT (partition) DO UPDATE SET owner = EXCLUDED.owner, epoch = EXCLUDED.epoch`)

/** Contacts whose ids fall in LANE (as the api's ids for this lane would). */
const createContacts = (projectId: string, lanes: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contacts: Array<{ id: string; email: string }> = []
    while (contacts.length < CONTACTS) {
      const id = uuidv7()
      if (Number.parseInt(id.slice(-2), 16) % lanes !== LANE) continue
      contacts.push({ id, email: `c${contacts.length}@example.org` })
    }
    for (const contact of contacts) {
      yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                 VALUES (${contact.id}, ${projectId}, ${contact.email}, true, '{"n": 100, "keep": 1}'::jsonb, now() - interval '1 day', now() - interval '1 day')`
    }
    return contacts
  })

/**
 * The batches: tracked events over the contacts (data changes, subscription changes, removals, three event
 * names at times spread over the last hour), a message redelivered, an event split again at a new position.
 */
const batchesFor = (projectId: string, contacts: ReadonlyArray<{ id: string; email: string }>, base: number) => {
  const random = prng(42)
  const batches: Array<Array<Delivered>> = []
  let seq = 0
  let envelope = 1
  let previous: Delivered | undefined
  let replayed: Array<TrackedEvent> = []
  for (let b = 0; b < 10; b++) {
    const batch: Array<Delivered> = []
    for (let m = 0; m < 3; m++) {
      const events: Array<TrackedEvent> = []
      for (let i = 0; i < 6; i++) {
        const contact = contacts[Math.floor(random() * contacts.length)]!
        const roll = random()
        const name = roll < 0.5 ? "page_view" : roll < 0.8 ? "purchase" : "click"
        const set: Record<string, unknown> = random() < 0.6 ? { n: Math.floor(random() * 1000) } : {}
        if (random() < 0.2) set.plan = random() < 0.5 ? "pro" : "free"
        events.push({
          eventId: uuidv7(),
          contactId: contact.id,
          email: contact.email,
          name,
          subscribed: random() < 0.15 ? random() < 0.5 : null,
          set,
          remove: random() < 0.1 ? ["keep"] : [],
          data: { i, b },
          at: new Date(base + (b * 18 + m * 6 + i) * 20_000).toISOString(),
          pos: envelope * INGEST_POSITIONS + i
        })
      }
      // Events of an earlier envelope split again into a new lane message at new positions: stored once.
      if (b === 1 && m === 0) events.push(...replayed.map((event, index) => ({ ...event, pos: envelope * INGEST_POSITIONS + 99 + index })))
      envelope++
      if (b === 0 && m === 1) replayed = [...events]
      const message: Delivered = { seq: ++seq, partition: PARTITION, lane: LANE, body: { kind: "track", projectId, events } }
      batch.push(message)
    }
    // The previous batch's last message again (ack_wait redelivery): skipped.
    if (previous && b % 3 === 1) batch.unshift(previous)
    previous = batch.at(-1)
    batches.push(batch)
  }
  return batches
}

/** Everything the batches leave about a project, by email and segment name (ids and clock times differ). */
const snapshot = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contacts = yield* sql`SELECT email, subscribed, data FROM contacts WHERE project_id = ${projectId} ORDER BY email`
    const events = yield* sql`
      SELECT c.email, e.name, e.data, e.created_at FROM events e JOIN contacts c ON c.id = e.contact_id
      WHERE e.project_id = ${projectId} AND e.name NOT LIKE 'segment.%' AND e.name NOT LIKE 'contact.%'
      ORDER BY c.email, e.created_at, e.name, e.data::text`
    // The events the batches recorded about their own contacts (entry/exit, subscription changes).
    const ownEvents = yield* sql`
      SELECT c.email, e.name, e.data - 'segmentId' - 'contactId' AS data, e.created_at FROM events e JOIN contacts c ON c.id = e.contact_id
      WHERE e.project_id = ${projectId} AND (e.name LIKE 'segment.%' OR e.name LIKE 'contact.%')
      ORDER BY c.email, e.created_at, e.name`
    const aggregates = yield* sql`
      SELECT c.email, a.name, a.count, a.first_at, a.last_at
      FROM event_aggregates a JOIN contacts c ON c.id = a.contact_id
      WHERE a.project_id = ${projectId} ORDER BY c.email, a.name`
    const memberships = yield* sql`
      SELECT s.name, c.email, m.entered_at, m.exited_at FROM segment_memberships m
      JOIN segments s ON s.id = m.segment_id JOIN contacts c ON c.id = m.contact_id
      WHERE m.project_id = ${projectId} ORDER BY s.name, c.email`
    const counts = yield* sql`
      SELECT s.name, sum(sc.members)::int AS members FROM segment_counts sc JOIN segments s ON s.id = sc.segment_id
      WHERE s.project_id = ${projectId} GROUP BY s.name ORDER BY s.name`
    const timers = yield* sql`
      SELECT c.email, t.due_at FROM timers t JOIN contacts c ON c.id = t.contact_id WHERE t.project_id = ${projectId} ORDER BY c.email`
    const out = yield* sql<{ name: string; email: string; at: string }>`
      SELECT payload->>'name' AS name, payload->>'email' AS email, payload->>'at' AS at FROM outbox
      WHERE subject LIKE ${`%.out.${projectId}.%`} ORDER BY payload->>'email', payload->>'at', payload->>'name'`
    const laneOffset = yield* sql`SELECT applied_seq::int, ingest_pos::text FROM lane_offsets WHERE project_id = ${projectId}`
    return { contacts, events, ownEvents, aggregates, memberships, counts, timers, out, laneOffset }
  })

layer(Runtime, { timeout: 120_000 })("a batch of tracked events in one write", (it) => {
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
            const contacts = yield* createContacts(projectId, outbox.lanes.count)
            const context: BatchContext = {
              projectId,
              lane: LANE,
              partition: PARTITION,
              epoch: 1,
              workerId: WORKER,
              outbox,
              segmentState: { segments: undefined, backfills: [] },
              workflows: { runtime, state: newWorkflowState() }
            }
            const paths: Array<boolean> = []
            for (const [index, batch] of batchesFor(projectId, contacts, base).entries()) {
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
