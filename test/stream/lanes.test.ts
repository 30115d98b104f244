/**
 * Lanes: one project's contacts spread over many partitions, so over many workers; each contact's
 * messages stay in order on its lane. And the upgrade from per-project subjects.
 */
import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { uuidv7 } from "../../src/domain/ids.ts"
import { makeLanes } from "../../src/stream/lanes.ts"
import { legacyPartitionOf } from "../../src/stream/subjects.ts"
import { eventually, laneSubject, readStream } from "../support/nats.ts"
import { createStack, request, type Stack, type TestProject } from "../support/stack.ts"

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"
const lanes = makeLanes(16, 32)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let stack: Stack
beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
})
afterAll(async () => {
  await stack?.stop()
})

const count = async (text: string, params: Array<unknown>) => (await stack.query<{ n: number }>(text, params))[0]!.n

/** Each contact's events one request at a time (so in order), the contacts concurrently. */
const trackInOrder = async (apiUrl: string, project: TestProject, contacts: number, events: number) => {
  await Promise.all(Array.from({ length: contacts }, async (_, c) => {
    for (let n = 1; n <= events; n++) {
      const res = await request(apiUrl, "POST", "/v1/track", {
        key: project.publicKey,
        body: { email: `c${c}@lanes.test`, event: "step", data: { counter: n } }
      })
      expect(res.status, res.text).toBe(200)
    }
  }))
}

describe("one busy project across workers", () => {
  it("two workers apply one project's lanes at the same time, each contact's events in order, each once", async () => {
    const api = await stack.start("api")
    const workers = [await stack.start("worker"), await stack.start("worker")]
    const project = await stack.createProject("busy")
    // Both workers hold partitions before the load starts.
    await eventually(async () => {
      const owners = await stack.query<{ owner: string }>("SELECT DISTINCT owner FROM partition_leases WHERE owner IS NOT NULL")
      expect(owners).toHaveLength(2)
    }, 20_000)
    const contacts = 32
    const events = 12
    await trackInOrder(api.url, project, contacts, events)
    await eventually(
      async () => expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])).toBe(contacts * events),
      30_000
    )
    const counters = await stack.query<{ counter: number }>(
      "SELECT (data->>'counter')::int AS counter FROM contacts WHERE project_id = $1",
      [project.id]
    )
    expect(counters.map((row) => row.counter)).toEqual(Array(contacts).fill(events))
    const [aggregate] = await stack.query<{ total: number }>(
      "SELECT sum(count)::int AS total FROM event_aggregates WHERE project_id = $1 AND name = 'step'",
      [project.id]
    )
    expect(aggregate!.total).toBe(contacts * events)
    // The project's events went through many lanes, whose partitions the two workers share.
    const applied = await stack.query<{ lane: number }>("SELECT lane FROM lane_offsets WHERE project_id = $1", [project.id])
    expect(applied.length).toBeGreaterThanOrEqual(8)
    const owners = await stack.query<{ owner: string }>(
      "SELECT DISTINCT owner FROM partition_leases WHERE partition = ANY($1::int[])",
      [applied.map((row) => lanes.partitionOf(project.id, row.lane))]
    )
    expect(owners.length).toBe(2)
    await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())])
  }, 120_000)

  it("keeps segment counts exact when a backfill is spread over lanes and workers", async () => {
    const api = await stack.start("api")
    const workers = [await stack.start("worker"), await stack.start("worker")]
    const project = await stack.createProject("backfill")
    await stack.query(
      `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'b' || n || '@lanes.test', true, jsonb_build_object('score', n), now(), now()
      FROM generate_series(1, 3000) n`,
      [project.id]
    )
    const segment = await request(api.url, "POST", "/segments", {
      key: project.secretKey,
      body: {
        name: "Top",
        condition: { logic: "AND", groups: [{ filters: [{ field: "data.score", operator: "greaterThan", value: 1234 }] }] }
      }
    })
    expect(segment.status).toBe(201)
    await eventually(async () => {
      const [row] = await stack.query<{ backfilled_version: number; version: number }>(
        "SELECT backfilled_version, version FROM segments WHERE id = $1",
        [segment.json.id]
      )
      expect(row!.backfilled_version).toBe(row!.version)
    }, 30_000)
    expect(await count("SELECT count(*)::int AS n FROM segment_backfills WHERE segment_id = $1", [segment.json.id])).toBe(16)
    const read = await request(api.url, "GET", `/segments/${segment.json.id}`, { key: project.secretKey })
    expect(read.json.memberCount).toBe(3000 - 1234)
    expect(await count("SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL", [segment.json.id]))
      .toBe(3000 - 1234)
    // Members leave through their own lanes; the count follows exactly.
    for (let n = 1235; n <= 1244; n++) {
      const res = await request(api.url, "POST", "/v1/track", {
        key: project.publicKey,
        body: { email: `b${n}@lanes.test`, event: "demoted", data: { score: 0 } }
      })
      expect(res.status).toBe(200)
    }
    await eventually(async () => {
      const after = await request(api.url, "GET", `/segments/${segment.json.id}`, { key: project.secretKey })
      expect(after.json.memberCount).toBe(3000 - 1234 - 10)
    }, 20_000)
    await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())])
  }, 120_000)
})

describe("a segment edited while two workers apply its project's lanes", () => {
  it("ends with exactly the members the edited condition picks, its count exact, each entry and exit once", async () => {
    const api = await stack.start("api")
    const workers = [await stack.start("worker"), await stack.start("worker")]
    const project = await stack.createProject("edited")
    await eventually(async () => {
      const owners = await stack.query<{ owner: string }>("SELECT DISTINCT owner FROM partition_leases WHERE owner IS NOT NULL")
      expect(owners).toHaveLength(2)
    }, 20_000)
    const contacts = 200
    await stack.query(
      `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'e' || n || '@lanes.test', true, jsonb_build_object('score', n), now(), now()
      FROM generate_series(0, $2::int - 1) n`,
      [project.id, contacts]
    )
    const scoreAbove = (threshold: number) => ({
      logic: "AND",
      groups: [{ filters: [{ field: "data.score", operator: "greaterThan", value: threshold }] }]
    })
    const created = await request(api.url, "POST", "/segments", {
      key: project.secretKey,
      body: { name: "High", condition: scoreAbove(300), trackMembership: true }
    })
    expect(created.status, created.text).toBe(201)
    const segmentId: string = created.json.id
    const backfilled = () =>
      eventually(async () => {
        const [row] = await stack.query<{ backfilled_version: number; version: number }>(
          "SELECT backfilled_version, version FROM segments WHERE id = $1",
          [segmentId]
        )
        expect(row!.backfilled_version).toBe(row!.version)
      }, 30_000)
    await backfilled()

    // Every contact's score moves 4 times, one request after the other (so in order), 50 contacts at once;
    // the condition changes after the first third of the traffic, while both workers' turns run.
    const finalScore = new Map<number, number>()
    let sent = 0
    let edited = false
    const edit = async () => {
      edited = true
      const res = await request(api.url, "PATCH", `/segments/${segmentId}`, {
        key: project.secretKey,
        body: { condition: scoreAbove(150) }
      })
      expect(res.status, res.text).toBe(200)
    }
    const track = async (c: number) => {
      for (let step = 0; step < 4; step++) {
        const score = (c * 7 + step * 131) % 400
        const res = await request(api.url, "POST", "/v1/track", {
          key: project.publicKey,
          body: { email: `e${c}@lanes.test`, event: "scored", data: { score } }
        })
        expect(res.status, res.text).toBe(200)
        finalScore.set(c, score)
        if (++sent >= (contacts * 4) / 3 && !edited) await edit()
      }
    }
    for (let first = 0; first < contacts; first += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, k) => track(first + k)))
    }
    expect(edited).toBe(true)
    await eventually(
      async () =>
        expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'scored'", [project.id])).toBe(
          contacts * 4
        ),
      30_000
    )
    await backfilled()

    const expected = [...finalScore].filter(([, score]) => score > 150).map(([c]) => `e${c}@lanes.test`).sort()
    await eventually(async () => {
      const members = await stack.query<{ email: string }>(
        `SELECT c.email FROM segment_memberships m JOIN contacts c ON c.id = m.contact_id
         WHERE m.segment_id = $1 AND m.exited_at IS NULL ORDER BY c.email`,
        [segmentId]
      )
      expect(members.map((row) => row.email)).toEqual(expected)
      const read = await request(api.url, "GET", `/segments/${segmentId}`, { key: project.secretKey })
      expect(read.json.memberCount).toBe(expected.length)
    }, 20_000)
    // Each contact's entries and exits on OUT alternate (none twice in a row) and end where it is.
    const changes = await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.segment.high.*`)
    const byContact = new Map<string, Array<string>>()
    for (const change of changes)
      byContact.set(change.data.email, [...byContact.get(change.data.email) ?? [], change.subject.split(".").at(-1)!])
    expect(byContact.size).toBeGreaterThan(50)
    const members = new Set(expected)
    for (const [email, sequence] of byContact) {
      sequence.forEach((kind, i) => expect(kind, `${email}: ${sequence.join(",")}`).not.toBe(sequence[i - 1]))
      expect(sequence.at(-1), `${email}: ${sequence.join(",")}`).toBe(members.has(email) ? "entry" : "exit")
    }
    await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())])
  }, 240_000)
})

describe("upgrading a deployment from per-project subjects", () => {
  it("applies the messages published before lanes first, in order, then the lane messages; nothing lost or twice", async () => {
    const project = await stack.createProject("upgrade")
    // As a deployment of the previous release leaves it: stream offsets exist, nothing drained yet.
    await stack.query("INSERT INTO project_offsets (project_id, applied_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING", [project.id])
    await stack.query("UPDATE stream_upgrade SET drained_at = NULL")
    await stack.query("UPDATE partition_state SET legacy_drained = false")
    const contactId = uuidv7()
    const event = (n: number) => ({
      eventId: uuidv7(),
      contactId,
      email: "old@lanes.test",
      name: "step",
      subscribed: null,
      set: { counter: n },
      remove: [],
      data: { counter: n },
      at: new Date(Date.now() + n).toISOString()
    })
    const nc = await connect({ servers: NATS_URL })
    const js = jetstream(nc)
    const legacySubject = `${stack.natsPrefix}.in.${legacyPartitionOf(project.id, 32)}.${project.id}.track`
    const laneOfContact = laneSubject(stack.natsPrefix, project.id, contactId, "track")
    try {
      // In flight at the upgrade: events 1-5 from an api of the previous release, 6-8 from a new one.
      for (let n = 1; n <= 5; n++) {
        await js.publish(legacySubject, JSON.stringify({ kind: "track", projectId: project.id, events: [event(n)] }), { msgID: uuidv7() })
      }
      for (let n = 6; n <= 8; n++) {
        await js.publish(laneOfContact, JSON.stringify({ kind: "track", projectId: project.id, events: [event(n)] }), { msgID: uuidv7() })
      }
      const worker = await stack.start("worker")
      await eventually(async () => {
        const [state] = await stack.query<{ drained: boolean }>("SELECT drained_at IS NOT NULL AS drained FROM stream_upgrade")
        expect(state!.drained).toBe(true)
      }, 30_000)
      await eventually(async () => {
        expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])).toBe(8)
        const [contact] = await stack.query<{ counter: number }>(
          "SELECT (data->>'counter')::int AS counter FROM contacts WHERE project_id = $1",
          [project.id]
        )
        // Applied in the order accepted: the lane messages after every older one.
        expect(contact!.counter).toBe(8)
      }, 30_000)
      // An api of the previous release still running after the drain: its messages are applied too.
      await js.publish(legacySubject, JSON.stringify({ kind: "track", projectId: project.id, events: [event(9)] }), { msgID: uuidv7() })
      await eventually(
        async () => expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])).toBe(9),
        20_000
      )
      // Redelivered copies change nothing: restart the worker (consumers recreated at the watermarks).
      await worker.stop("SIGKILL")
      const again = await stack.start("worker")
      await sleep(3_000)
      expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])).toBe(9)
      const [aggregate] = await stack.query<{ total: number }>(
        "SELECT sum(count)::int AS total FROM event_aggregates WHERE project_id = $1",
        [project.id]
      )
      expect(aggregate!.total).toBe(9)
      await again.stop()
    } finally {
      await nc.close()
    }
  }, 120_000)
})
