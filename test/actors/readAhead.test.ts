/**
 * Read-ahead (src/actors/readAhead.ts): a lane's next batch of tracked events starts its transaction while
 * the batch before it commits. Which messages may go ahead is a pure rule, tested first. Then one stream of
 * tracked events goes through a lane's actor twice, with read-ahead and without, and must leave the same
 * contacts, events, aggregates, memberships, timers, emitted events and offset; a batch read ahead of one
 * that fails at its COMMIT must be rolled back and applied after it; and a lane stopped with batches in
 * flight (as a killed worker's) must be finished by its next owner: nothing lost, doubled or reordered.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import type { JsMsg } from "@nats-io/jetstream"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Delivered } from "../../src/actors/messages.ts"
import { PartitionRun } from "../../src/actors/partitionRun.ts"
import { makeProjectActors } from "../../src/actors/ProjectActors.ts"
import { readAheadCount } from "../../src/actors/readAhead.ts"
import { AppConfig } from "../../src/config.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Dns } from "../../src/lib/dns.ts"
import { MailQueue } from "../../src/mail/MailQueue.ts"
import { registry } from "../../src/observability/Metrics.ts"
import { Billing } from "../../src/store/Billing.ts"
import { Contacts } from "../../src/store/Contacts.ts"
import { Projects } from "../../src/store/Projects.ts"
import { Segments, segmentSlug } from "../../src/store/Segments.ts"
import { Templates } from "../../src/store/Templates.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import type { TrackedEvent } from "../../src/stream/messages.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { one, prng, segmentCreator } from "../support/actorFixtures.ts"
import { insertProject, OutboxWithoutNats, TestDatabase } from "../support/database.ts"

const Runtime = WorkflowRuntime.layer.pipe(
  Layer.provideMerge(
    Layer.mergeAll(Contacts.layer, Templates.layer, Billing.layer, MailQueue.layer.pipe(Layer.provide(Projects.layer)), Dns.layer)
  ),
  Layer.provideMerge(
    Segments.layer.pipe(Layer.provideMerge(OutboxWithoutNats), Layer.provideMerge(AppConfig.layer), Layer.provideMerge(TestDatabase))
  )
)

const LANE = 0
const WORKER = "read-ahead-test"

const event = (contactId: string, email: string, name = "page_view"): TrackedEvent => ({
  eventId: uuidv7(),
  contactId,
  email,
  name,
  subscribed: null,
  set: {},
  remove: [],
  data: {},
  at: new Date().toISOString()
})

const track = (seq: number, events: ReadonlyArray<TrackedEvent>): Delivered => ({
  seq,
  partition: 1,
  lane: LANE,
  body: { kind: "track", projectId: "p", events }
})

describe("which messages may be read ahead", () => {
  const a = event("id-a", "a@example.org")
  const b = event("id-b", "b@example.org")
  const c = event("id-c", "c@example.org")

  it("the run of tracked events whose contacts the current batch does not touch", () => {
    expect(readAheadCount([track(1, [a])], [track(2, [b]), track(3, [c]), track(4, [a]), track(5, [b])], 1000)).toBe(2)
  })

  it("a contact is the same by email or by id", () => {
    expect(readAheadCount([track(1, [a])], [track(2, [{ ...b, email: a.email }])], 1000)).toBe(0)
    expect(readAheadCount([track(1, [a])], [track(2, [{ ...b, contactId: a.contactId }])], 1000)).toBe(0)
  })

  it("a message with any event of a touched contact stops the run", () => {
    expect(readAheadCount([track(1, [a])], [track(2, [b, a]), track(3, [c])], 1000)).toBe(0)
  })

  it("anything but tracked events waits, before or behind", () => {
    const contact: Delivered = {
      seq: 2,
      partition: 1,
      lane: LANE,
      body: { kind: "contact", type: "contact.updated", projectId: "p", contactId: "id-c", at: c.at }
    }
    expect(readAheadCount([track(1, [a])], [contact, track(3, [b])], 1000)).toBe(0)
    expect(readAheadCount([track(1, [a]), contact], [track(3, [b])], 1000)).toBe(0)
  })

  it("at most `max`", () => {
    expect(readAheadCount([track(1, [a])], [track(2, [b]), track(3, [c])], 1)).toBe(1)
  })
})

/** Contacts of LANE, created as the api would have. */
const createContacts = (projectId: string, count: number, lanes: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contacts: Array<{ id: string; email: string }> = []
    while (contacts.length < count) {
      const id = uuidv7()
      if (Number.parseInt(id.slice(-2), 16) % lanes === LANE) contacts.push({ id, email: `c${contacts.length}@example.org` })
    }
    yield* sql`
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT (x->>'id')::uuid, ${projectId}, x->>'email', true, '{"n": 100}'::jsonb, now() - interval '1 day', now() - interval '1 day'
      FROM jsonb_array_elements(${JSON.stringify(contacts)}::jsonb) x`
    return contacts
  })

const ENTERED_BIG = "Entered big"

const createSegments = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const create = yield* segmentCreator(projectId)
    yield* create("Big", one({ field: "data.n", operator: "greaterThan", value: 500 }))
    yield* create("Viewed thrice today", one({ field: "event.page_view", operator: "triggeredAtLeast", value: 3, within: 1, unit: "days" }))
    yield* create("Clicked twice", one({ field: "event.click", operator: "triggeredAtLeast", value: 2 }))
    yield* create(ENTERED_BIG, one({ field: "event.segment.big.entry", operator: "triggered" }))
    yield* sql`UPDATE segments SET backfilled_version = version WHERE project_id = ${projectId}`
  })

/**
 * Messages over the contacts, in rounds: each round touches every contact twice, in an order of its own, so
 * a run of messages is disjoint from the run before it until the round comes back to its contacts (a
 * batch has a next batch to read ahead), while each contact's events spread over many messages (order
 * matters: the last `n` set wins, counts cross thresholds at a given event). Times a second apart from `base`.
 */
const streamFor = (
  projectId: string,
  partition: number,
  contacts: ReadonlyArray<{ id: string; email: string }>,
  rounds: number,
  base: number
) => {
  const random = prng(7)
  const stream: Array<Delivered> = []
  let seq = 0
  for (let round = 0; round < rounds; round++) {
    const order = contacts.map((contact) => ({ contact, key: random() })).sort((a, b) => a.key - b.key).map(({ contact }) => contact)
    for (let index = 0; index < order.length; index += 2) {
      seq++
      const events = order.slice(index, index + 2).map((contact, i) => ({
        ...event(contact.id, contact.email, random() < 0.6 ? "page_view" : "click"),
        set: random() < 0.5 ? { n: Math.floor(random() * 1000), seq } : {},
        at: new Date(base + (seq * 2 + i) * 1000).toISOString()
      }))
      stream.push({ seq, partition, lane: LANE, body: { kind: "track", projectId, events } })
    }
  }
  return stream
}

/**
 * What a project's batches left, clock-free and whatever the batches were. A contact's entry and exit events
 * depend on where batches begin and end (a batch evaluates each contact once, after all its events), and so
 * do a segment over them (ENTERED_BIG), membership rows of contacts that entered and left, and the times of
 * timers: those are not compared, the events are checked against the memberships they lead to (emitted below).
 */
const snapshot = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.all({
      contacts: sql`SELECT email, subscribed, data FROM contacts WHERE project_id = ${projectId} ORDER BY email`,
      events: sql`
        SELECT c.email, e.name, e.created_at FROM events e JOIN contacts c ON c.id = e.contact_id
        WHERE e.project_id = ${projectId} AND e.name NOT LIKE 'segment.%' ORDER BY c.email, e.created_at, e.name`,
      aggregates: sql`
        SELECT c.email, a.name, a.count, a.first_at, a.last_at FROM event_aggregates a JOIN contacts c ON c.id = a.contact_id
        WHERE a.project_id = ${projectId} AND a.name NOT LIKE 'segment.%' ORDER BY c.email, a.name`,
      members: sql`
        SELECT s.name, c.email FROM segment_memberships m
        JOIN segments s ON s.id = m.segment_id JOIN contacts c ON c.id = m.contact_id
        WHERE m.project_id = ${projectId} AND m.exited_at IS NULL AND s.name <> ${ENTERED_BIG} ORDER BY s.name, c.email`,
      counts: sql`
        SELECT s.name, sum(sc.members)::int AS members FROM segment_counts sc JOIN segments s ON s.id = sc.segment_id
        WHERE s.project_id = ${projectId} AND s.name <> ${ENTERED_BIG} GROUP BY s.name ORDER BY s.name`,
      // Who has a timer; not when: a timer is only ever moved earlier, to the soonest lapse any batch saw.
      timers: sql`SELECT c.email FROM timers t JOIN contacts c ON c.id = t.contact_id WHERE t.project_id = ${projectId} ORDER BY c.email`,
      laneOffset: sql`SELECT applied_seq::int FROM lane_offsets WHERE project_id = ${projectId}`
    }).pipe(Effect.map((parts) =>
      JSON.parse(JSON.stringify(parts, (_, value) => typeof value === "bigint" ? String(value) : value)) as {
        readonly [K in keyof typeof parts]: Array<Record<string, unknown>>
      }
    ))
  })

/**
 * Per segment and contact, whether its entry and exit events (recorded, and in the outbox for OUT) leave it a
 * member: each entry after an exit, so a member has one entry more than exits, a former member as many.
 */
const emitted = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const balance = (rows: ReadonlyArray<{ email: string; name: string; n: number }>) => {
      const members = new Map<string, number>()
      for (const row of rows) {
        const [, slug, kind] = /^segment\.(.+)\.(entry|exit)$/.exec(row.name)!
        const key = `${slug}/${row.email}`
        members.set(key, (members.get(key) ?? 0) + (kind === "entry" ? row.n : -row.n))
      }
      return [...members].sort(([a], [b]) => a.localeCompare(b))
    }
    const recorded = yield* sql<{ email: string; name: string; n: number }>`
      SELECT c.email, e.name, count(*)::int AS n FROM events e JOIN contacts c ON c.id = e.contact_id
      WHERE e.project_id = ${projectId} AND e.name LIKE 'segment.%' GROUP BY 1, 2`
    const out = yield* sql<{ email: string; name: string; n: number }>`
      SELECT payload->>'email' AS email, payload->>'name' AS name, count(*)::int AS n FROM outbox
      WHERE subject LIKE ${`%.out.${projectId}.%`} AND payload->>'name' LIKE 'segment.%' GROUP BY 1, 2`
    const memberships = yield* sql<{ name: string; email: string; member: boolean }>`
      SELECT s.name, c.email, m.exited_at IS NULL AS member FROM segment_memberships m
      JOIN segments s ON s.id = m.segment_id JOIN contacts c ON c.id = m.contact_id WHERE m.project_id = ${projectId}`
    const expected = memberships.map((row) => [`${segmentSlug(row.name)}/${row.email}`, row.member ? 1 : 0] as const)
    return { recorded: balance(recorded), out: balance(out), memberships: expected.sort(([a], [b]) => a.localeCompare(b)) }
  })

const readAheadCounts = async () => {
  const metric = await registry.getSingleMetric("mailstream_actor_read_ahead_total")!.get()
  const of = (outcome: string) => metric.values.find((value) => value.labels.outcome === outcome)?.value ?? 0
  return { committed: of("committed"), abandoned: of("abandoned") }
}

/**
 * A lane's actor, as a worker runs it, over a partition leased to WORKER. The outbox relay is not running
 * (this file has no NATS): the rows a batch appends stay in the outbox, where the snapshot reads them.
 * Each phase's messages are delivered in slices, as a consumer would hand them over, and acked before the
 * next phase starts; resolves with the order messages were acked in.
 */
const runLane = (options: {
  readonly phases: ReadonlyArray<ReadonlyArray<Delivered>>
  readonly partition: number
  readonly readAhead: boolean
  readonly slice: number
  /** The lease's epoch (a takeover bumps it). */
  readonly epoch?: number
  /** The partition's watermark when the run starts (where a new owner's consumer starts). */
  readonly watermark?: number
  /** Stops the actors (their transactions rolled back, as a killed worker's) once this many batches read ahead committed. */
  readonly stopAfterReadAheads?: number
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    const epoch = options.epoch ?? 1
    yield* sql`INSERT INTO partition_leases (partition, owner, epoch) VALUES (${options.partition}, ${WORKER}, ${epoch})
               ON CONFLICT (partition) DO UPDATE SET owner = EXCLUDED.owner, epoch = EXCLUDED.epoch`
    const actors = yield* makeProjectActors({
      workerId: WORKER,
      outbox,
      relay: { wake: Effect.void, drainNow: Effect.succeed(false), forget: () => Effect.void },
      wakeSender: () => Effect.void,
      wakeSegmentTimers: Effect.void,
      wakeWorkflowTimers: Effect.void,
      changed: () => Effect.void,
      readAhead: options.readAhead
    })
    const run = new PartitionRun(options.partition, epoch, options.watermark ?? 0)
    const acked: Array<number> = []
    const readAheadsBefore = (yield* Effect.promise(readAheadCounts)).committed
    const stopNow = () =>
      Effect.map(Effect.promise(readAheadCounts), (counts) =>
        options.stopAfterReadAheads !== undefined && counts.committed - readAheadsBefore >= options.stopAfterReadAheads)
    let delivered = 0
    let stopped = false
    for (const phase of options.phases) {
      for (let start = 0; start < phase.length && !stopped; start += options.slice) {
        // Stopping as soon as enough batches were read ahead leaves messages delivered and not applied
        // however fast the actor keeps up (it did, on a quiet machine, before the last slice).
        if (yield* stopNow()) {
          stopped = true
          break
        }
        for (const message of phase.slice(start, start + options.slice)) {
          run.delivered(message.seq)
          yield* actors.deliver({
            delivered: message,
            message: {
              ack: () =>
                void acked.push(message.seq)
            } as unknown as JsMsg,
            run
          })
        }
        yield* Effect.sleep("2 millis")
      }
      if (stopped) break
      delivered += phase.length
      while (acked.length < delivered && !(yield* stopNow())) yield* Effect.sleep("5 millis")
    }
    yield* actors.stopAll
    return { acked, watermark: run.watermark }
  })

layer(Runtime, { timeout: 180_000, excludeTestServices: true })("read-ahead", (it) => {
  it.effect("leaves what applying the batches one after the other leaves", () =>
    Effect.gen(function*() {
      const outbox = yield* Outbox
      const before = yield* Effect.promise(readAheadCounts)
      const results = []
      const projectIds: Array<string> = []
      const base = Date.now() - 70 * 60_000
      for (const [partition, readAhead] of [[11, true], [12, false]] as const) {
        const projectId = yield* insertProject
        projectIds.push(projectId)
        yield* createSegments(projectId)
        const contacts = yield* createContacts(projectId, 1_000, outbox.lanes.count)
        const stream = streamFor(projectId, partition, contacts, 4, base)
        const lane = yield* runLane({ phases: [stream], partition, readAhead, slice: 10 })
        // Acked in stream order, the partition's watermark through the last message.
        expect(lane.acked).toEqual(stream.map((message) => message.seq))
        expect(lane.watermark).toBe(2_000)
        results.push(yield* snapshot(projectId))
      }
      const after = yield* Effect.promise(readAheadCounts)
      // Batches were read ahead and committed (so the comparison below is not between two plain runs).
      expect(after.committed - before.committed).toBeGreaterThan(0)
      expect(after.abandoned - before.abandoned).toBe(0)
      const [withReadAhead, without] = results
      expect(withReadAhead).toEqual(without)
      expect(withReadAhead!.events.length).toBe(4_000)
      expect(withReadAhead!.laneOffset).toEqual([{ applied_seq: 2_000 }])
      expect(withReadAhead!.members.length).toBeGreaterThan(0)
      // Every entry and exit emitted once: they balance to the memberships, in the events and in the outbox.
      const balance = yield* emitted(projectIds[0]!)
      expect(balance.memberships.length).toBeGreaterThan(0)
      expect(balance.recorded).toEqual(balance.memberships)
      expect(balance.out).toEqual(balance.memberships)
    }))

  it.effect("a batch read ahead of one that fails is rolled back and applied after it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const projectId = yield* insertProject
      yield* createSegments(projectId)
      const contacts = yield* createContacts(projectId, 1_300, outbox.lanes.count)
      // The first transaction that stores an event named `boom` fails at its COMMIT, when the next batch has
      // been read ahead (a deferred trigger runs at COMMIT; a sequence is not rolled back with it).
      const sequence = `boom_${projectId.replaceAll("-", "")}`
      yield* sql.unsafe(`CREATE SEQUENCE ${sequence}`)
      yield* sql.unsafe(`
        CREATE FUNCTION ${sequence}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.name = 'boom' AND NEW.project_id = '${projectId}' AND nextval('${sequence}') = 1 THEN
            RAISE EXCEPTION 'boom';
          END IF;
          RETURN NEW;
        END $$`)
      yield* sql.unsafe(`CREATE CONSTRAINT TRIGGER ${sequence} AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED
                         FOR EACH ROW EXECUTE FUNCTION ${sequence}()`)
      const before = yield* Effect.promise(readAheadCounts)
      // One message first, so the actor has its segments loaded (a new actor's first batch takes the general path).
      const partition = 13
      const stream = contacts.map((contact, index) =>
        track(index + 1, [event(contact.id, contact.email, index === 1 ? "boom" : "page_view")])
      )
        .map((message) => ({ ...message, partition, body: { ...message.body, projectId } } as Delivered))
      const lane = yield* runLane({ phases: [stream.slice(0, 1), stream.slice(1)], partition, readAhead: true, slice: 1_300 })
      for (const drop of [`DROP TRIGGER ${sequence} ON events`, `DROP FUNCTION ${sequence}()`, `DROP SEQUENCE ${sequence}`])
        yield* sql.unsafe(drop)
      const after = yield* Effect.promise(readAheadCounts)
      expect(lane.acked).toEqual(stream.map((message) => message.seq))
      const stored = yield* sql<{ name: string; n: number }>`
        SELECT name, count(*)::int AS n FROM events WHERE project_id = ${projectId} GROUP BY name ORDER BY name`
      expect(stored).toEqual([{ name: "boom", n: 1 }, { name: "page_view", n: 1_299 }])
      expect(yield* sql`SELECT applied_seq::int FROM lane_offsets WHERE project_id = ${projectId}`).toEqual([{ applied_seq: 1_300 }])
      // The first batch after the warm-up held the boom (at most 1,000 messages: the rest was read ahead of it).
      expect(after.abandoned - before.abandoned).toBeGreaterThan(0)
    }))

  it.effect("a lane stopped with a batch read ahead (its transactions rolled back) is applied by the next owner once, in order", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const projectId = yield* insertProject
      yield* createSegments(projectId)
      const contacts = yield* createContacts(projectId, 1_000, outbox.lanes.count)
      const partition = 14
      const stream = streamFor(projectId, partition, contacts, 4, Date.now() - 70 * 60_000)
      // The first owner stops (as a killed worker would: nothing after its last commit survives) once a
      // batch was read ahead (the first: on a loaded machine a third came too late, after the whole stream);
      // what it applied but did not ack comes again and is skipped.
      const first = yield* runLane({ phases: [stream], partition, readAhead: true, slice: 10, stopAfterReadAheads: 1 })
      expect(first.acked.length).toBeGreaterThan(0)
      expect(first.acked.length).toBeLessThan(stream.length)
      const second = yield* runLane({
        phases: [stream.filter((message) => message.seq > first.watermark)],
        partition,
        readAhead: true,
        slice: 10,
        epoch: 2,
        watermark: first.watermark
      })
      expect(second.watermark).toBe(stream.length)
      // Every event once, and each contact's data as its last event in the stream left it.
      const ids = stream.flatMap((message) => message.body.kind === "track" ? message.body.events.map((event) => event.eventId) : []).sort()
      const stored = yield* sql<
        { id: string }
      >`SELECT id FROM events WHERE project_id = ${projectId} AND name NOT LIKE 'segment.%' ORDER BY id`
      expect(stored.map((row) => row.id)).toEqual(ids)
      const [aggregates] = yield* sql<{ n: number }>`
        SELECT sum(count)::int AS n FROM event_aggregates WHERE project_id = ${projectId} AND name NOT LIKE 'segment.%'`
      expect(aggregates!.n).toBe(ids.length)
      const last = new Map<string, unknown>()
      for (const message of stream) {
        if (message.body.kind !== "track") continue
        for (const event of message.body.events)
          if ((event.set as { seq?: number }).seq !== undefined) last.set(event.email, (event.set as { seq: number }).seq)
      }
      const data = yield* sql<{ email: string; seq: number | null }>`
        SELECT email, (data->>'seq')::int AS seq FROM contacts WHERE project_id = ${projectId}`
      expect(new Map(data.filter((row) => row.seq !== null).map((row) => [row.email, row.seq]))).toEqual(last)
      expect(yield* sql`SELECT applied_seq::int FROM lane_offsets WHERE project_id = ${projectId}`).toEqual([{
        applied_seq: stream.length
      }])
    }))
})
