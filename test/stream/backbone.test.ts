import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { uuidv7 } from "../../src/domain/ids.ts"
import { eventually, laneSubject, readStream } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
})
afterAll(async () => {
  await stack?.stop()
})

/** A tracked event's stream message of one contact, published straight to the project's lane subject (past the api's checks). */
const publishTrack = (
  js: ReturnType<typeof jetstream>,
  subject: string,
  projectId: string,
  email: string,
  name: string,
  data: Record<string, unknown>
) =>
  js.publish(
    subject,
    JSON.stringify({
      kind: "track",
      projectId,
      events: [{
        eventId: uuidv7(),
        contactId: uuidv7(),
        email,
        name,
        subscribed: null,
        set: {},
        remove: [],
        data,
        at: new Date().toISOString()
      }]
    }),
    { msgID: uuidv7() }
  )

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const owners = async () =>
  stack.query<{ owner: string | null; n: number }>(
    `SELECT l.owner, count(*)::int AS n FROM partition_leases l JOIN partition_state s ON s.partition = l.partition
     WHERE s.expires_at > now() GROUP BY l.owner ORDER BY l.owner`
  )

const storedEvents = async (projectId: string) =>
  (await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [projectId]))[0]!.n

/** Tracks `count` events per project, one request at a time per contact, with a running counter. */
const trackSequences = async (api: () => string, projects: ReadonlyArray<TestProject>, contacts: number, count: number) => {
  const accepted: Array<{ projectId: string; eventId: string }> = []
  await Promise.all(projects.flatMap((project) =>
    Array.from({ length: contacts }, async (_, c) => {
      let failures = 0
      for (let n = 1; n <= count; n++) {
        const res = await request(api(), "POST", "/v1/track", {
          key: project.publicKey,
          body: { email: `c${c}@order.test`, event: n % 2 === 0 ? "even" : "odd", data: { counter: n } }
        }).catch((error) => ({ status: 0, json: undefined, text: String(error) }))
        if (res.status === 200) {
          accepted.push({ projectId: project.id, eventId: res.json.data.event })
          failures = 0
        } else {
          // Not accepted: send the same step again, but not forever.
          if (++failures > 50) throw new Error(`track keeps failing: ${res.status} ${res.text}`)
          await sleep(50)
          n--
        }
      }
    })
  ))
  return accepted
}

describe("stream backbone", () => {
  it("keeps per-project order with 3 workers and interleaved projects", async () => {
    const api = await stack.start("api")
    const workers = await Promise.all([stack.start("worker"), stack.start("worker"), stack.start("worker")])
    const projects = await Promise.all([1, 2, 3, 4].map((i) => stack.createProject(`order-${i}`)))
    const contacts = 5
    const count = 30
    await trackSequences(() => api.url, projects, contacts, count)
    for (const project of projects) {
      await eventually(async () => expect(await storedEvents(project.id)).toBe(contacts * count), 20_000)
      // Applied in order: each contact's data holds the last counter, and the aggregates are exact.
      const rows = await stack.query<{ email: string; counter: number }>(
        "SELECT email, (data->>'counter')::int AS counter FROM contacts WHERE project_id = $1 ORDER BY email",
        [project.id]
      )
      expect(rows.map((r) => r.counter)).toEqual(Array(contacts).fill(count))
      const aggregates = await stack.query<{ name: string; total: number }>(
        "SELECT name, sum(count)::int AS total FROM event_aggregates WHERE project_id = $1 GROUP BY name ORDER BY name",
        [project.id]
      )
      expect(aggregates).toEqual([{ name: "even", total: contacts * count / 2 }, { name: "odd", total: contacts * count / 2 }])
    }
    // All three workers took a share of the partitions.
    await eventually(async () => expect((await owners()).filter((row) => row.owner !== null)).toHaveLength(3), 15_000)
    await Promise.all([api.stop(), ...workers.map((w) => w.stop())])
  }, 90_000)

  it("loses nothing and applies nothing twice when workers are SIGKILLed mid-batch", async () => {
    const api = await stack.start("api")
    const workers: Array<Service> = [await stack.start("worker"), await stack.start("worker")]
    const projects = await Promise.all([1, 2].map((i) => stack.createProject(`kill-${i}`)))
    let done = false
    const chaos = (async () => {
      for (let round = 0; round < 3 && !done; round++) {
        await sleep(400 + Math.random() * 800)
        const victim = Math.floor(Math.random() * workers.length)
        await workers[victim]!.stop("SIGKILL")
        workers[victim] = await stack.start("worker")
      }
    })()
    const contacts = 8
    const count = 40
    const accepted = await trackSequences(() => api.url, projects, contacts, count)
    done = true
    await chaos
    for (const project of projects) {
      await eventually(async () => expect(await storedEvents(project.id)).toBe(contacts * count), 30_000)
      const ids = accepted.filter((a) => a.projectId === project.id).map((a) => a.eventId).sort()
      const stored = (await stack.query<{ id: string }>("SELECT id FROM events WHERE project_id = $1 ORDER BY id", [project.id]))
        .map((row) => row.id)
      expect(stored).toEqual(ids)
      const [aggregate] = await stack.query<{ total: number; contacts: number }>(
        "SELECT sum(count)::int AS total, count(DISTINCT contact_id)::int AS contacts FROM event_aggregates WHERE project_id = $1",
        [project.id]
      )
      expect(aggregate).toEqual({ total: contacts * count, contacts })
      const counters = await stack.query<{ counter: number }>(
        "SELECT (data->>'counter')::int AS counter FROM contacts WHERE project_id = $1",
        [project.id]
      )
      expect(counters.map((r) => r.counter)).toEqual(Array(contacts).fill(count))
    }
    await Promise.all([api.stop(), ...workers.map((w) => w.stop())])
  }, 120_000)

  it("rebalances when a worker joins and takes over a dead worker's partitions within 10 s", async () => {
    const first = await stack.start("worker")
    await eventually(async () => expect(await owners()).toEqual([{ owner: expect.any(String), n: 32 }]), 10_000)
    const second = await stack.start("worker")
    await eventually(async () => {
      const shares = await owners()
      expect(shares.map((row) => row.n).sort()).toEqual([16, 16])
    }, 15_000)
    await second.stop("SIGKILL")
    const killedAt = Date.now()
    await eventually(async () => expect(await owners()).toEqual([{ owner: expect.any(String), n: 32 }]), 15_000)
    expect(Date.now() - killedAt).toBeLessThan(10_000)
    await first.stop()
  }, 60_000)

  it("loses no accepted event when the api is SIGKILLed right after PubAcks", async () => {
    const api = await stack.start("api")
    const worker = await stack.start("worker")
    const project = await stack.createProject("api-kill")
    const accepted: Array<string> = []
    let killed: Promise<void> | undefined
    await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) =>
          request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email: `k${i % 20}@api.test`, event: "e" } })
            .then((res) => {
              if (res.status === 200)
                accepted.push(res.json.data.event)
              if (accepted.length === 100)
                killed = api.stop("SIGKILL")
            })
            .catch(() => undefined)
      )
    )
    await killed
    expect(accepted.length).toBeGreaterThanOrEqual(100)
    await eventually(async () => {
      const stored = new Set(
        (await stack.query<{ id: string }>("SELECT id FROM events WHERE project_id = $1", [project.id])).map((r) => r.id)
      )
      for (const id of accepted) expect(stored.has(id)).toBe(true)
    }, 15_000)
    await worker.stop()
  }, 60_000)

  it("drops a duplicate Nats-Msg-Id and stores a replayed event once", async () => {
    const worker = await stack.start("worker")
    const project = await stack.createProject("dupes")
    const contact = await request((await stack.start("api")).url, "POST", "/contacts", {
      key: project.secretKey,
      body: { email: "dup@x.test" }
    })
    const event = {
      eventId: uuidv7(),
      contactId: contact.json.id,
      email: "dup@x.test",
      name: "dup",
      subscribed: null,
      set: {},
      remove: [],
      data: {},
      at: new Date().toISOString()
    }
    const envelope = JSON.stringify({ kind: "track", projectId: project.id, events: [event] })
    const subject = laneSubject(stack.natsPrefix, project.id, contact.json.id, "track")
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
    const js = jetstream(nc)
    const msgId = uuidv7()
    const first = await js.publish(subject, envelope, { msgID: msgId })
    const second = await js.publish(subject, envelope, { msgID: msgId })
    expect(second.duplicate).toBe(true)
    expect(second.seq).toBe(first.seq)
    // The same event in a different envelope (a republish with a new message id) is stored once.
    await js.publish(subject, envelope, { msgID: uuidv7() })
    await nc.close()
    expect(await readStream(`${stack.natsPrefix}_IN`, subject)).toHaveLength(2)
    await eventually(async () => {
      const [row] = await stack.query<{ count: number }>(
        "SELECT count::int AS count FROM event_aggregates WHERE project_id = $1 AND name = 'dup'",
        [project.id]
      )
      expect(row?.count).toBe(1)
    })
    expect(await storedEvents(project.id)).toBe(1)
    await worker.stop()
  }, 60_000)

  it("lets a direct write win over a tracked change accepted before it but applied after it", async () => {
    const api = await stack.start("api")
    const project = await stack.createProject("lww")
    const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })
    const created = await secret("POST", "/contacts", { email: "lww@x.test", subscribed: true, data: { plan: "free" } })
    // No worker yet: the tracked change waits in the stream while the direct write lands.
    const tracked = await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "lww@x.test", event: "upgrade", subscribed: false, data: { plan: "pro", seen: true } }
    })
    expect(tracked.status).toBe(200)
    await secret("PATCH", `/contacts/${created.json.id}`, { subscribed: true, data: { plan: "enterprise" } })
    const worker = await stack.start("worker")
    await eventually(async () => expect(await storedEvents(project.id)).toBe(1), 15_000)
    const contact = await secret("GET", `/contacts/${created.json.id}`)
    // plan and subscribed were written directly after the track was accepted; seen was not.
    expect(contact.json.data).toEqual({ plan: "enterprise", seen: true })
    expect(contact.json.subscribed).toBe(true)
    await Promise.all([api.stop(), worker.stop()])
  }, 60_000)

  it("sets aside a message that fails on its own, and applies the project's later messages", async () => {
    const worker = await stack.start("worker")
    const project = await stack.createProject("poison")
    const subject = laneSubject(stack.natsPrefix, project.id, undefined, "track")
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
    const js = jetstream(nc)
    // Postgres refuses U+0000 in jsonb: this one can never be stored (the api rejects it; this bypasses the api).
    await publishTrack(js, subject, project.id, "poison@x.test", "bad", { k: "a\u0000b" })
    await publishTrack(js, subject, project.id, "poison@x.test", "good", { k: "fine" })
    await nc.close()
    await eventually(async () => {
      const names = (await stack.query<{ name: string }>("SELECT name FROM events WHERE project_id = $1", [project.id])).map((r) => r.name)
      expect(names).toEqual(["good"])
    }, 20_000)
    const letters = await stack.query<{ payload: string; error: string }>("SELECT payload, error FROM dead_letters WHERE project_id = $1", [
      project.id
    ])
    expect(letters).toHaveLength(1)
    expect(JSON.parse(letters[0]!.payload).events[0].name).toBe("bad")
    // Listed through the API; data Postgres can never hold is refused for replay with the reason.
    const api = await stack.start("api")
    const [letter] = (await request(api.url, "GET", "/dead-letters", { key: project.secretKey })).json.data
    expect(letter).toMatchObject({ source: "stream", summary: { kind: "track", name: "bad" } })
    const replay = await request(api.url, "POST", `/dead-letters/${letter.id}/replay`, { key: project.secretKey })
    expect(replay.status).toBe(422)
    expect(replay.json.error.errors[0].code).toBe("not_replayable")
    await api.stop()
    await worker.stop()
  }, 60_000)

  it("keeps a lane's messages it could neither apply nor set aside, and applies them once it can", async () => {
    const worker = await stack.start("worker")
    const project = await stack.createProject("unparkable")
    const subject = laneSubject(stack.natsPrefix, project.id, undefined, "track")
    // Writing a dead letter of this project fails (not transiently) until the trigger goes; a sequence, outside
    // the transactions that roll back, counts the attempts.
    const attempts = `dl_attempts_${project.id.replaceAll("-", "")}`
    await stack.query(`CREATE SEQUENCE ${attempts}`)
    await stack.query(`
      CREATE FUNCTION ${attempts}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.project_id = '${project.id}' THEN PERFORM nextval('${attempts}'); RAISE EXCEPTION 'dead letters refused'; END IF;
        RETURN NEW;
      END $$`)
    await stack.query(`CREATE TRIGGER ${attempts} BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION ${attempts}()`)
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
    const js = jetstream(nc)
    await publishTrack(js, subject, project.id, "unparkable@x.test", "bad", { k: "a\u0000b" })
    await publishTrack(js, subject, project.id, "unparkable@x.test", "good", { k: "fine" })
    // Its dead letter refused as often as the actor retries a failure that is not transient.
    await eventually(async () => {
      const [row] = await stack.query<{ n: string }>(`SELECT last_value AS n FROM ${attempts}`)
      expect(Number(row!.n)).toBeGreaterThanOrEqual(3)
    }, 20_000)
    await stack.query(`DROP TRIGGER ${attempts} ON dead_letters`)
    // A later message of the lane does not carry its offset past the two.
    await publishTrack(js, subject, project.id, "unparkable@x.test", "later", { k: "fine" })
    await nc.close()
    await eventually(async () => {
      const names = (await stack.query<{ name: string }>("SELECT name FROM events WHERE project_id = $1", [project.id])).map((r) => r.name)
      expect(names.sort()).toEqual(["good", "later"])
      const letters = await stack.query<{ payload: string }>("SELECT payload FROM dead_letters WHERE project_id = $1", [project.id])
      expect(letters.map((letter) => JSON.parse(letter.payload).events[0].name)).toEqual(["bad"])
    }, 30_000)
    await worker.stop()
  }, 60_000)
})
