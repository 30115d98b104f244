/**
 * A lane actor publishes its own batches' outbox rows after the commit (ProjectActors.publishCommitted),
 * rather than wait for the relay: each message still reaches OUT once, the rows leave the outbox, and
 * after a batch whose rows were left to the relay the actor first has the relay publish what waits, so
 * nothing is overtaken.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { uuidv7 } from "../../src/domain/ids.ts"
import { eventually, freePort, readStream } from "../support/nats.ts"
import { createStack, request, type Stack, type TestProject } from "../support/stack.ts"
import { buildWorkflow, executionsOf } from "../workflows/support.ts"

let stack: Stack
let project: TestProject
beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  project = await stack.createProject("actor publish")
})
afterAll(async () => {
  await stack?.stop()
})

const PUBLISHED_BY_ACTORS = "mailstream_outbox_published_by_actors_total"

const publishedByActors = async (metricsPort: number) => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  return Number(text.match(new RegExp(`^${PUBLISHED_BY_ACTORS} (\\S+)$`, "m"))?.[1] ?? 0)
}

const track = async (apiUrl: string, email: string, event: string) => {
  const res = await request(apiUrl, "POST", "/v1/track", { key: project.publicKey, body: { email, event } })
  expect(res.status, res.text).toBe(200)
}

const outSubjects = async () =>
  (await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.>`)).map((message) => ({
    subject: message.subject.slice(`${stack.natsPrefix}.out.${project.id}.`.length),
    email: message.data.email as string | undefined,
    msgId: message.msgId
  }))

/** A segment of the contacts who triggered `event`, whose entries go out on OUT. */
const createEventSegment = async (apiUrl: string, name: string, event: string) => {
  const res = await request(apiUrl, "POST", "/segments", {
    key: project.secretKey,
    body: {
      name,
      trackMembership: true,
      condition: { logic: "AND", groups: [{ filters: [{ field: `event.${event}`, operator: "triggered" }] }] }
    }
  })
  expect(res.status, res.text).toBe(201)
}

const outboxRows = async () => (await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox"))[0]!.n

describe("a lane actor's own publishing", () => {
  it("publishes its batches' events itself, each once, and their rows leave the outbox", async () => {
    const api = await stack.start("api")
    const metricsPort = await freePort()
    const worker = await stack.start("worker", { METRICS_PORT: String(metricsPort) })
    await createEventSegment(api.url, "Probed", "probe")
    const contacts = Array.from({ length: 24 }, (_, i) => `c${i}@publish.test`)
    // Two rounds of first events: a new actor's first batch goes through the relay (its lane may have
    // left rows there), and its next one has the relay drain the outbox before the actor publishes.
    for (const round of [1, 2]) {
      for (const email of contacts) await track(api.url, email, "hello")
      await eventually(async () =>
        expect(
          (await stack.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM events WHERE project_id = $1",
            [project.id]
          ))[0]!.n
        ).toBe(round * contacts.length), 20_000)
    }
    const before = await publishedByActors(metricsPort)

    for (const email of contacts) await track(api.url, email, "probe")
    await eventually(async () => {
      const entries = (await outSubjects()).filter((message) => message.subject === "segment.probed.entry")
      expect(entries.map((entry) => entry.email).sort()).toEqual([...contacts].sort())
    }, 20_000)
    // Published by the lanes' actors, not the relay (each counts its rows once JetStream acknowledged
    // them, a moment after they show in the stream); the rows deleted after.
    await eventually(async () => expect(await publishedByActors(metricsPort) - before).toBeGreaterThanOrEqual(contacts.length))
    await eventually(async () => expect(await outboxRows()).toBe(0))
    // Once each: no message id twice (the relay may race an actor for a row; JetStream keeps one).
    const ids = (await outSubjects()).map((message) => message.msgId)
    expect(new Set(ids).size).toBe(ids.length)
    await Promise.all([api.stop(), worker.stop()])
  }, 90_000)

  it("after a batch the relay publishes, the actor has the relay publish what waits before publishing its own", async () => {
    const api = await stack.start("api")
    let worker = await stack.start("worker")
    await createEventSegment(api.url, "Again", "again")
    await track(api.url, "first@publish.test", "probe")
    await eventually(async () => expect((await outSubjects()).some((message) => message.email === "first@publish.test")).toBe(true), 20_000)
    await worker.stop()
    await eventually(async () => expect(await outboxRows()).toBe(0))

    // On a new worker, the lane's first batch takes the general path, whose rows the relay publishes.
    const metricsPort = await freePort()
    worker = await stack.start("worker", { METRICS_PORT: String(metricsPort) })
    await track(api.url, "second@publish.test", "hello")
    await eventually(async () =>
      expect(
        (await stack.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND contact_id = (SELECT id FROM contacts WHERE email = $2)",
          [project.id, "second@publish.test"]
        ))[0]!.n
      ).toBe(1), 20_000)
    // As if that batch's row still waited for the relay (another process holding its lock, or a worker
    // that died before publishing): written quietly, as a batch's rows are, so no NOTIFY wakes a relay.
    const leftover = uuidv7()
    await stack.query(
      `WITH quiet AS (SELECT set_config('mailstream.quiet_outbox', 'on', true))
       INSERT INTO outbox (id, subject, payload) SELECT $1, $2, $3::jsonb FROM quiet`,
      [leftover, `${stack.natsPrefix}.out.${project.id}.leftover`, JSON.stringify({ projectId: project.id, name: "leftover" })]
    )
    // The lane's next batch has the relay publish what waits, in order, before its own entry.
    await track(api.url, "second@publish.test", "probe")
    await eventually(
      async () => expect((await outSubjects()).some((message) => message.email === "second@publish.test")).toBe(true),
      20_000
    )
    const subjects = await outSubjects()
    const at = (predicate: (message: (typeof subjects)[number]) => boolean) => subjects.findIndex(predicate)
    expect(at((message) => message.msgId === leftover)).toBeGreaterThanOrEqual(0)
    expect(at((message) => message.msgId === leftover)).toBeLessThan(at((message) => message.email === "second@publish.test"))
    await eventually(async () => expect(await outboxRows()).toBe(0))

    // With nothing left, the one after is published by the actor itself.
    await track(api.url, "second@publish.test", "again")
    await eventually(
      async () =>
        expect(
          (await outSubjects()).some((message) => message.subject === "segment.again.entry" && message.email === "second@publish.test")
        ).toBe(true),
      20_000
    )
    expect(await publishedByActors(metricsPort)).toBeGreaterThanOrEqual(1)
    await Promise.all([api.stop(), worker.stop()])
  }, 90_000)

  it("leaves a batch's rows to the relay, woken at once, when a workflow step appended rows of its own", async () => {
    const api = await stack.start("api")
    const worker = await stack.start("worker")
    const { workflowId } = await buildWorkflow({ url: api.url, key: project.secretKey }, {
      name: "Upgrade",
      eventName: "upgrade",
      first: "update",
      steps: { update: { type: "UPDATE_CONTACT", config: { updates: { plan: "pro" } }, next: "done" }, done: { type: "EXIT" } }
    })
    // Two batches first: the lane's actor publishes its own rows from its third on.
    for (const n of [1, 2]) {
      await track(api.url, "wf@publish.test", "hello")
      await eventually(async () =>
        expect(
          (await stack.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND contact_id = (SELECT id FROM contacts WHERE email = $2)",
            [project.id, "wf@publish.test"]
          ))[0]!.n
        ).toBe(n), 20_000)
    }
    await eventually(async () => expect(await outboxRows()).toBe(0))
    // The step's contact update appends a row the batch does not list: the relay must publish it now,
    // not at its 30 s safety poll.
    await track(api.url, "wf@publish.test", "upgrade")
    await eventually(
      async () => expect((await executionsOf({ url: api.url, key: project.secretKey }, workflowId, "EXITED")).length).toBe(1),
      10_000
    )
    await eventually(async () => expect(await outboxRows()).toBe(0), 3_000)
    await Promise.all([api.stop(), worker.stop()])
  }, 90_000)
})
