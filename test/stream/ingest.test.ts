/**
 * Ingest envelopes: the api publishes one envelope per project per flush; the worker leasing its
 * ingest partition splits it into lane messages, stamping each event with its ingest position, and a
 * lane applies each position once (a split redone after a crash republishes positions already applied).
 */
import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ingestPosition, splitEnvelopes } from "../../src/actors/IngestSplitter.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { laneSubject as subjectOfLane, makeLanes } from "../../src/stream/lanes.ts"
import type { TrackedEvent } from "../../src/stream/messages.ts"
import { eventually, laneSubject } from "../support/nats.ts"
import { createStack, request, type Stack } from "../support/stack.ts"

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"
const lanes = makeLanes(16, 32)

const tracked = (contactId: string, n: number, padding = ""): TrackedEvent => ({
  eventId: uuidv7(),
  contactId,
  email: `${contactId}@ingest.test`,
  name: "step",
  subscribed: null,
  set: { counter: n },
  remove: [],
  data: { counter: n, padding },
  at: new Date().toISOString()
})

describe("splitting ingest envelopes", () => {
  const project = "0b9a4c52-7c1e-4f57-9d2e-5d1c3f6a7b80"
  const contacts = Array.from({ length: 40 }, () => crypto.randomUUID())

  it("gives each lane its events of every envelope, in order, stamped with their positions", () => {
    const envelopes = [
      { seq: 7, projectId: project, events: contacts.map((contact) => tracked(contact, 1)) },
      { seq: 9, projectId: project, events: contacts.map((contact) => tracked(contact, 2)) }
    ]
    const messages = splitEnvelopes("p", lanes, envelopes, 256 * 1024)
    const laneCount = new Set(contacts.map((contact) => lanes.laneOf(contact))).size
    expect(messages).toHaveLength(laneCount)
    const seen: Array<{ contactId: string; pos: number; counter: number }> = []
    for (const message of messages) {
      const body = JSON.parse(message.json)
      expect(body.kind).toBe("track")
      expect(body.projectId).toBe(project)
      const lane = lanes.laneOf(body.events[0].contactId)
      expect(message.subject).toBe(subjectOfLane("p", lanes, project, lane, "track"))
      for (const event of body.events) {
        expect(lanes.laneOf(event.contactId)).toBe(lane)
        seen.push({ contactId: event.contactId, pos: event.pos, counter: event.set.counter })
      }
      // Positions grow within a lane message: the first envelope's events come first.
      const positions = body.events.map((event: { pos: number }) => event.pos)
      expect([...positions].sort((a, b) => a - b)).toEqual(positions)
    }
    expect(seen).toHaveLength(80)
    contacts.forEach((contact, index) => {
      expect(seen.filter((event) => event.contactId === contact)).toEqual([
        { contactId: contact, pos: ingestPosition(7, index), counter: 1 },
        { contactId: contact, pos: ingestPosition(9, index), counter: 2 }
      ])
    })
  })

  it("cuts a lane's events into messages under the size limit, and names them by their positions", () => {
    const contact = contacts[0]!
    const events = Array.from({ length: 10 }, (_, n) => tracked(contact, n, "x".repeat(300)))
    const messages = splitEnvelopes("p", lanes, [{ seq: 3, projectId: project, events }], 1_000)
    expect(messages.length).toBeGreaterThan(3)
    const all = messages.flatMap((message) => JSON.parse(message.json).events.map((event: { pos: number }) => event.pos))
    expect(all).toEqual(events.map((_, index) => ingestPosition(3, index)))
    for (const message of messages) {
      const positions = JSON.parse(message.json).events.map((event: { pos: number }) => event.pos)
      expect(message.msgID).toBe(`ingest:${project}:${lanes.laneOf(contact)}:${positions[0]}:${positions[positions.length - 1]}`)
    }
    // The same envelopes split again give the same messages (JetStream drops them as duplicates).
    expect(splitEnvelopes("p", lanes, [{ seq: 3, projectId: project, events }], 1_000)).toEqual(messages)
  })
})

describe("splitting an event delete among envelopes", () => {
  const project = "0b9a4c52-7c1e-4f57-9d2e-5d1c3f6a7b80"
  const contact = "0190a3c2-0000-7000-8000-000000000003"
  const command = { kind: "command", type: "deleteEvents", projectId: project, commandId: "c1", name: "step" } as const

  it("hands the delete to every lane, in its place between the events before and after it", () => {
    const messages = splitEnvelopes("p", lanes, [
      { seq: 4, projectId: project, events: [tracked(contact, 1), tracked(contact, 2)] },
      { seq: 5, projectId: project, command },
      { seq: 6, projectId: project, events: [tracked(contact, 3)] }
    ], 256 * 1024)
    const lane = lanes.laneOf(contact)
    const own = messages.filter((message) => message.lane === `${project}/${lane}`)
    expect(own.map((message) => JSON.parse(message.json).kind)).toEqual(["track", "command", "track"])
    expect(JSON.parse(own[0]!.json).events.map((event: { set: { counter: number } }) => event.set.counter)).toEqual([1, 2])
    expect(JSON.parse(own[1]!.json)).toEqual({ ...command, pos: ingestPosition(5, 0) })
    expect(JSON.parse(own[2]!.json).events.map((event: { pos: number }) => event.pos)).toEqual([ingestPosition(6, 0)])
    // Every other lane gets the delete alone, on its own lane subject, named by its position.
    const others = messages.filter((message) => message.lane !== `${project}/${lane}`)
    expect(others).toHaveLength(lanes.count - 1)
    for (const message of others) {
      const otherLane = Number(message.lane.split("/")[1])
      expect(message.subject).toBe(subjectOfLane("p", lanes, project, otherLane, "command"))
      expect(message.msgID).toBe(`ingest:${project}:${otherLane}:command:${ingestPosition(5, 0)}`)
    }
  })
})

describe("ingest through a worker", () => {
  let stack: Stack
  beforeAll(async () => {
    stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it("publishes one envelope per flush on the project's ingest subject, split into lanes and applied once per position", async () => {
    const api = await stack.start("api")
    const worker = await stack.start("worker")
    const project = await stack.createProject("ingest")
    const responses = await Promise.all(Array.from({ length: 24 }, (_, n) =>
      request(api.url, "POST", "/v1/track", {
        key: project.publicKey,
        body: { email: `c${n}@ingest.test`, event: "signup", data: { n } }
      })))
    for (const res of responses) expect(res.status, res.text).toBe(200)
    await eventually(async () => {
      const [row] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])
      expect(row!.n).toBe(24)
    }, 30_000)

    // The api published to the ingest subject only; the lanes got the events from the splitter.
    const nc = await connect({ servers: NATS_URL })
    try {
      const js = jetstream(nc)
      const jsm = await js.jetstreamManager()
      const ingest = await jsm.streams.info(`${stack.natsPrefix}_IN`, { subjects_filter: `${stack.natsPrefix}.ingest.>` })
      const ingestSubjects = Object.keys(ingest.state.subjects ?? {})
      expect(ingestSubjects).toHaveLength(1)
      expect(ingestSubjects[0]).toMatch(new RegExp(`^${stack.natsPrefix}\\.ingest\\.\\d+\\.${project.id}\\.track$`))
      const offsets = await stack.query<{ lane: number; ingest_pos: string }>(
        "SELECT lane, ingest_pos::text FROM lane_offsets WHERE project_id = $1",
        [project.id]
      )
      expect(offsets.length).toBeGreaterThanOrEqual(8)
      for (const offset of offsets) expect(Number(offset.ingest_pos)).toBeGreaterThan(0)
      await eventually(async () => {
        const [state] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM partition_state WHERE ingest_seq > 0")
        expect(state!.n).toBe(1)
      }, 20_000)

      // A split redone after a crash republishes positions the lane applied: skipped, whatever they carry.
      const [contact] = await stack.query<{ id: string; email: string }>(
        "SELECT id, email FROM contacts WHERE project_id = $1 ORDER BY email LIMIT 1",
        [project.id]
      )
      const lane = lanes.laneOf(contact!.id)
      const [applied] = await stack.query<{ ingest_pos: string }>(
        "SELECT ingest_pos::text FROM lane_offsets WHERE project_id = $1 AND lane = $2",
        [project.id, lane]
      )
      const appliedPos = Number(applied!.ingest_pos)
      const replayed = { ...tracked(contact!.id, 99), email: contact!.email, name: "replayed", pos: appliedPos }
      const fresh = { ...tracked(contact!.id, 100), email: contact!.email, name: "fresh", pos: appliedPos + 1 }
      await js.publish(
        laneSubject(stack.natsPrefix, project.id, contact!.id, "track"),
        JSON.stringify({ kind: "track", projectId: project.id, events: [replayed, fresh] }),
        { msgID: uuidv7() }
      )
      await eventually(async () => {
        const names = await stack.query<{ name: string }>(
          "SELECT name FROM events WHERE project_id = $1 AND contact_id = $2 ORDER BY created_at, name",
          [project.id, contact!.id]
        )
        expect(names.map((row) => row.name)).toEqual(["signup", "fresh"])
      }, 20_000)
      const [data] = await stack.query<{ counter: number }>("SELECT (data->>'counter')::int AS counter FROM contacts WHERE id = $1", [
        contact!.id
      ])
      expect(data!.counter).toBe(100)
    } finally {
      await nc.close()
    }
    await Promise.all([api.stop(), worker.stop()])
  }, 120_000)

  it("orders DELETE /events/:name with the tracks accepted before and after it, even when no worker splits them yet", async () => {
    const api = await stack.start("api")
    const project = await stack.createProject("delete-order")
    const secret = (method: string, path: string) => request(api.url, method, path, { key: project.secretKey })
    const track = (data: Record<string, unknown>) =>
      request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "del@ingest.test", event: "doomed", data } })
    // Nothing is split while the events and the delete are accepted: a delete sent to the lanes
    // directly would reach them before the events accepted earlier, and delete none of them.
    expect((await track({ n: 1 })).status).toBe(200)
    expect((await track({ n: 2 })).status).toBe(200)
    expect((await secret("DELETE", "/events/doomed")).status).toBe(202)
    expect((await track({ n: 3 })).status).toBe(200)
    const worker = await stack.start("worker")
    // Before: 1, 2; after the delete: none; then 3 alone (sent to the lanes directly, the delete found nothing: 1, 2, 3).
    await eventually(async () => {
      const events = await stack.query<{ n: number }>(
        "SELECT (data->>'n')::int AS n FROM events WHERE project_id = $1 AND name = 'doomed'",
        [project.id]
      )
      expect(events).toEqual([{ n: 3 }])
    }, 30_000)
    // Every lane gets the delete, and moves its position past it (lanes without events on their own time).
    await eventually(async () => {
      const [offsets] = await stack.query<{ lanes: number }>(
        "SELECT count(*)::int AS lanes FROM lane_offsets WHERE project_id = $1 AND ingest_pos > 0",
        [project.id]
      )
      expect(offsets!.lanes).toBe(lanes.count)
    }, 20_000)

    // The delete split again (a splitter crashed before acking) carries the position the lanes applied: skipped.
    const [contact] = await stack.query<{ id: string }>("SELECT id FROM contacts WHERE project_id = $1", [project.id])
    const [applied] = await stack.query<{ pos: string }>(
      "SELECT ingest_pos::text AS pos FROM lane_offsets WHERE project_id = $1 AND lane = $2",
      [project.id, lanes.laneOf(contact!.id)]
    )
    // The lanes without events applied nothing but the delete: their position is the delete's.
    const [other] = await stack.query<{ pos: string }>(
      "SELECT ingest_pos::text AS pos FROM lane_offsets WHERE project_id = $1 AND lane <> $2 LIMIT 1",
      [project.id, lanes.laneOf(contact!.id)]
    )
    const deletePos = Number(other!.pos)
    expect(deletePos).toBeLessThan(Number(applied!.pos))
    const nc = await connect({ servers: NATS_URL })
    try {
      const js = jetstream(nc)
      await js.publish(
        laneSubject(stack.natsPrefix, project.id, contact!.id, "command"),
        JSON.stringify({
          kind: "command",
          type: "deleteEvents",
          projectId: project.id,
          commandId: uuidv7(),
          name: "doomed",
          pos: deletePos
        }),
        { msgID: uuidv7() }
      )
      const marker = { ...tracked(contact!.id, 4), email: "del@ingest.test", name: "marker", pos: Number(applied!.pos) + 1 }
      await js.publish(
        laneSubject(stack.natsPrefix, project.id, contact!.id, "track"),
        JSON.stringify({ kind: "track", projectId: project.id, events: [marker] }),
        { msgID: uuidv7() }
      )
    } finally {
      await nc.close()
    }
    await eventually(async () => {
      const names = await stack.query<{ name: string }>(
        "SELECT name FROM events WHERE project_id = $1 ORDER BY name",
        [project.id]
      )
      expect(names.map((row) => row.name)).toEqual(["doomed", "marker"])
    }, 20_000)
    const [aggregate] = await stack.query<{ count: number }>(
      "SELECT sum(count)::int AS count FROM event_aggregates WHERE project_id = $1 AND name = 'doomed'",
      [project.id]
    )
    expect(aggregate!.count).toBe(1)
    await Promise.all([api.stop(), worker.stop()])
  }, 120_000)
})
