/**
 * What the actor-level tests share: a replayable generator, segments built from one filter each, the
 * layers a batch runs on, a lane's contacts and batches of tracked events, and a snapshot of what batches
 * leave in a project.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BatchContext, SegmentState } from "../../src/actors/batchContext.ts"
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
import { INGEST_POSITIONS, type TrackedEvent } from "../../src/stream/messages.ts"
import type { Outbox } from "../../src/stream/Outbox.ts"
import { newWorkflowState } from "../../src/workflows/engine.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { OutboxWithoutNats, TestDatabase } from "./database.ts"

/** A small deterministic generator, so a failure can be replayed. */
export const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

/** A condition of one filter. */
export const one = (
  filter: Record<string, unknown>
): Condition => ({ logic: "AND", groups: [{ filters: [filter] }] } as unknown as Condition)

/** Creates a project's dynamic segments that track membership (entry/exit events). */
export const segmentCreator = (projectId: string) =>
  Effect.map(
    Effect.service(Segments),
    (segments) => (name: string, condition: Condition) =>
      segments.create(projectId, { name, description: null, type: "DYNAMIC", condition, trackMembership: true })
  )

/**
 * The segments the batch tests evaluate: data fields, time windows (timers), windowed counts, a segment of
 * a segment, segments over the batch's own emitted events (several rounds deep) and all-time counts.
 */
export const createSegments = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const create = yield* segmentCreator(projectId)
    const big = yield* create("Big spenders", one({ field: "data.n", operator: "greaterThan", value: 500 }))
    yield* create("Recent buyers", one({ field: "event.purchase", operator: "triggeredWithin", value: 30, unit: "minutes" }))
    yield* create("Frequent", one({ field: "event.page_view", operator: "triggeredAtLeast", value: 3, within: 1, unit: "days" }))
    yield* create("Subscribed big", {
      logic: "AND",
      groups: [{
        filters: [{ field: `segment.${big.id}`, operator: "memberOfSegment" }, { field: "subscribed", operator: "equals", value: true }]
      }]
    } as unknown as Condition)
    // Read the batch's own emitted events: recorded and evaluated in the same batch, rounds deep.
    const entered = yield* create(
      "Entered big",
      one({ field: `event.segment.${segmentSlug("Big spenders")}.entry`, operator: "triggered" })
    )
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

/** Everything the batches leave about a project, by email and segment name (ids and clock times differ). */
export const snapshot = (projectId: string) =>
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
    const laneOffset = yield* sql`SELECT applied_seq::int, ingest_pos::text FROM lane_offsets WHERE project_id = ${projectId} ORDER BY lane`
    // The analytics rollups the events were counted into (their shards summed).
    const rollups = yield* sql`
      SELECT kind, stream, grain, bucket, key, sum(n)::int AS n FROM analytics_counters WHERE project_id = ${projectId}
      GROUP BY kind, stream, grain, bucket, key ORDER BY kind, stream, grain, bucket, key`
    return { contacts, events, ownEvents, aggregates, memberships, counts, timers, out, laneOffset, rollups }
  })

const Base = Segments.layer.pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

/** What a batch transaction needs (segments, the outbox without NATS, workflows), on a fresh database. */
export const BatchRuntime = WorkflowRuntime.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(
    Contacts.layer,
    Templates.layer,
    Billing.layer,
    MailQueue.layer.pipe(Layer.provide(Projects.layer)),
    Dns.layer
  )),
  Layer.provideMerge(Base)
)

export const TEST_WORKER = "test-worker"

/** A lane actor's batch context as a worker makes it, under TEST_WORKER's lease at epoch 1, its segments not yet loaded. */
export const laneContext = (
  lane: { readonly projectId: string; readonly lane: number; readonly partition: number; readonly facts?: SegmentState["facts"] },
  outbox: Outbox["Service"],
  runtime: WorkflowRuntime["Service"]
): BatchContext => ({
  projectId: lane.projectId,
  lane: lane.lane,
  partition: lane.partition,
  epoch: 1,
  workerId: TEST_WORKER,
  outbox,
  segmentState: { segments: undefined, backfills: [], ...(lane.facts === undefined ? {} : { facts: lane.facts }) },
  workflows: { runtime, state: newWorkflowState() }
})

/** The partition's lease held by TEST_WORKER at epoch 1. */
export const leaseFor = (partition: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO partition_leases (partition, owner, epoch) VALUES (${partition}, ${TEST_WORKER}, 1)
        ON CONFLICT (partition) DO UPDATE SET owner = EXCLUDED.owner, epoch = EXCLUDED.epoch`
  )

/** `count` contacts whose ids fall in `lane` (as the api's ids for that lane would), named c<lane>-<i>@example.org. */
export const createContacts = (projectId: string, lanes: number, lane: number, count = 12) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contacts: Array<{ id: string; email: string }> = []
    while (contacts.length < count) {
      const id = uuidv7()
      if (Number.parseInt(id.slice(-2), 16) % lanes !== lane) continue
      contacts.push({ id, email: lane === 0 ? `c${contacts.length}@example.org` : `c${lane}-${contacts.length}@example.org` })
    }
    for (const contact of contacts) {
      yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                 VALUES (${contact.id}, ${projectId}, ${contact.email}, true, '{"n": 100, "keep": 1}'::jsonb, now() - interval '1 day', now() - interval '1 day')`
    }
    return contacts
  })

/**
 * A lane's batches: tracked events over its contacts (data changes, subscription changes, removals, three
 * event names at times spread over the last hour), a message redelivered, an event split again at a new
 * position.
 */
export const batchesFor = (
  projectId: string,
  contacts: ReadonlyArray<{ id: string; email: string }>,
  base: number,
  options: { readonly lane: number; readonly partition: number; readonly seed?: number; readonly batches?: number }
) => {
  const random = prng(options.seed ?? 42)
  const batches: Array<Array<Delivered>> = []
  let seq = 0
  let envelope = 1
  let previous: Delivered | undefined
  let replayed: Array<TrackedEvent> = []
  for (let b = 0; b < (options.batches ?? 10); b++) {
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
      const message: Delivered = {
        seq: ++seq,
        partition: options.partition,
        lane: options.lane,
        body: { kind: "track", projectId, events }
      }
      batch.push(message)
    }
    // The previous batch's last message again (ack_wait redelivery): skipped.
    if (previous && b % 3 === 1) batch.unshift(previous)
    previous = batch.at(-1)
    batches.push(batch)
  }
  return batches
}
