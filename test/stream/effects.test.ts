import { spawn } from "node:child_process"
import { describe, expect, it } from "vitest"
import { eventually, freePort, NATS_SERVER, readStream } from "../support/nats.ts"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("all", (context) => ({ stack, api, project } = context))

const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })
const track = (body: unknown) => request(api.url, "POST", "/v1/track", { key: project.publicKey, body })

describe("emitted events", () => {
  it("emits contact.subscribed / contact.unsubscribed whenever the subscription actually changes, whoever changed it", async () => {
    const created = await secret("POST", "/contacts", { email: "sub@emit.test" })
    const id = created.json.id
    await secret("PATCH", `/contacts/${id}`, { subscribed: false }) // change (api)
    await secret("PATCH", `/contacts/${id}`, { subscribed: false }) // no change
    await track({ email: "sub@emit.test", event: "came_back", subscribed: true }) // change (track)
    await track({ email: "sub@emit.test", event: "again", subscribed: true }) // no change
    await eventually(async () => expect((await secret("GET", `/events?name=again`)).json.data).toHaveLength(1))
    await secret("POST", "/contacts", { email: "SUB@emit.test", subscribed: false }) // change (upsert)

    const out = await eventually(async () => {
      const messages = (await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.>`))
        .filter((m) => m.data.contactId === id)
      expect(messages).toHaveLength(3)
      return messages
    })
    expect(out.map((m) => m.data.name)).toEqual(["contact.unsubscribed", "contact.subscribed", "contact.unsubscribed"])
    for (const message of out) expect(message.subject.endsWith(`.${message.data.name}`)).toBe(true)
    expect((await secret("GET", `/contacts/${id}`)).json.subscribed).toBe(false)
    for (const message of out) expect(message.msgId).toBe(message.data.id)

    // Fed back into IN, they are recorded as the contact's events too.
    await eventually(async () => {
      const events = await secret("GET", `/events/contact/${id}`)
      const names = events.json.data.map((e: { name: string }) => e.name).sort()
      expect(names).toEqual(["again", "came_back", "contact.subscribed", "contact.unsubscribed", "contact.unsubscribed"])
    })
  })
})

describe("events API", () => {
  it("lists, filters, pages, counts and names events", async () => {
    for (let i = 0; i < 5; i++) await track({ email: `list${i % 2}@events.test`, event: i % 2 ? "clicked" : "viewed", data: { i } })
    // The two contacts' events go through their own lanes, stored independently of each other, and the
    // reads below count both: wait until every event of both is stored.
    await eventually(async () => {
      for (const [name, count] of [["viewed", 3], ["clicked", 2]] as const) {
        expect((await secret("GET", `/events?limit=1&name=${name}`)).json.total).toBe(count)
      }
    })
    const list = await secret("GET", "/events?limit=2&name=viewed")
    expect(list.json.total).toBe(3)
    expect(list.json.hasMore).toBe(true)
    expect(list.json.data).toHaveLength(2)
    const next = await secret("GET", `/events?limit=2&name=viewed&cursor=${list.json.cursor}`)
    expect(next.json.data).toHaveLength(1)
    expect(next.json.total).toBe(0)
    expect(next.json.data[0].data.i).toBe(0)

    const stats = await secret("GET", "/events/stats")
    const byName = Object.fromEntries(stats.json.byName.map((r: { name: string; count: number }) => [r.name, r.count]))
    expect(byName).toMatchObject({ viewed: 3, clicked: 2 })
    const today = new Date().toISOString().slice(0, 10)
    expect(stats.json.byDay).toEqual(expect.arrayContaining([{ day: today, name: "viewed", count: 3 }]))
    expect((await secret("GET", "/events/stats?from=nonsense")).status).toBe(400)
    expect((await secret("GET", "/events/stats?from=0000-01-01")).status).toBe(400)

    const names = await secret("GET", "/events/names")
    expect(names.json.names).toEqual(expect.arrayContaining([expect.objectContaining({ name: "viewed", count: 3 })]))
    const usage = await secret("GET", "/events/viewed/usage")
    expect(usage.json).toEqual({ event: "viewed", segments: [], workflows: [] })
    expect((await secret("GET", "/events/contact/0190a3c2-0000-7000-8000-000000000000")).status).toBe(404)
    // Another project sees none of it.
    const other = await stack.createProject()
    const theirs = await request(api.url, "GET", "/events", { key: other.secretKey })
    expect(theirs.json.data).toEqual([])
  })

  it("deletes events by name through the actor, ordered with tracks accepted before and after", async () => {
    await track({ email: "del@events.test", event: "doomed" })
    await track({ email: "del@events.test", event: "doomed" })
    const deleted = await secret("DELETE", "/events/doomed")
    expect(deleted.status).toBe(202)
    expect(deleted.json).toMatchObject({ accepted: true, event: "doomed" })
    await track({ email: "del@events.test", event: "doomed", data: { after: true } })
    await eventually(async () => {
      const res = await secret("GET", "/events?name=doomed")
      expect(res.json.data).toHaveLength(1)
      expect(res.json.data[0].data).toEqual({ after: true })
    })
    const [aggregate] = await stack.query<{ count: number }>(
      "SELECT count::int AS count FROM event_aggregates WHERE project_id = $1 AND name = 'doomed'",
      [project.id]
    )
    expect(aggregate?.count).toBe(1)
  })
})

describe("/metrics", () => {
  it("reports partition lag, actors, batch sizes and events applied in Prometheus text", async () => {
    await track({ email: "metrics@x.test", event: "m" })
    const text = await eventually(async () => {
      const res = await request(api.url, "GET", "/metrics")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toContain("text/plain")
      expect(res.text).toMatch(/^mailstream_partition_lag\{partition="\d+"\} \d+$/m)
      // The event applied (and the figures of the process that applied it reached this endpoint).
      expect(res.text).toMatch(/^mailstream_events_applied_total [1-9]\d*$/m)
      expect(res.text).toMatch(/^mailstream_actors_alive [1-9]\d*$/m)
      expect(res.text).toMatch(/^mailstream_actor_batch_size_count [1-9]\d*$/m)
      expect(res.text).toMatch(/^mailstream_partitions_owned 32$/m)
      return res.text
    }, 20_000)
    expect(text).toContain("mailstream_events_applied_total")
  })
})

describe("standalone worker metrics", () => {
  it("serves /metrics on METRICS_PORT", async () => {
    const port = await freePort()
    const worker = await stack.start("worker", { METRICS_PORT: String(port) })
    const res = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`)
      expect(r.status).toBe(200)
      return r.text()
    })
    expect(res).toContain("mailstream_partitions_owned")
    await worker.stop()
  })
})

describe("backpressure", () => {
  it.skipIf(!NATS_SERVER)("answers 503 within a bounded time when JetStream is unavailable, and recovers", async () => {
    const port = await freePort()
    const dir = `/tmp/mailstream-nats-${port}`
    const startNats = () => {
      const child = spawn(NATS_SERVER!, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" })
      return child
    }
    let nats = startNats()
    await new Promise((resolve) => setTimeout(resolve, 500))
    const own = await stack.start("api", { NATS_URL: `nats://127.0.0.1:${port}` })
    const body = { email: "bp@x.test", event: "e" }
    expect((await request(own.url, "POST", "/v1/track", { key: project.publicKey, body })).status).toBe(200)

    nats.kill("SIGKILL")
    const started = Date.now()
    const res = await request(own.url, "POST", "/v1/track", { key: project.publicKey, body })
    expect(res.status).toBe(503)
    expect(res.json.error.code).toBe("SERVICE_UNAVAILABLE")
    expect(Date.now() - started).toBeLessThan(6_000)

    nats = startNats()
    await eventually(async () => {
      expect((await request(own.url, "POST", "/v1/track", { key: project.publicKey, body })).status).toBe(200)
    }, 15_000)
    await own.stop()
    nats.kill("SIGKILL")
  }, 60_000)
})
