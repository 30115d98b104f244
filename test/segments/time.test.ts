import { describe, expect, it } from "vitest"
import { eventually, readStream } from "../support/nats.ts"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("api", (context) => ({ stack, api, project } = context))

const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })
const TEN_MINUTES = 10 * 60_000

/** 100,000 contacts straight into Postgres, `data.n` from 1 to 100,000. */
const insertNumberedContacts = (projectId: string) =>
  stack.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'u' || i || '@bulk.test', true, jsonb_build_object('n', i), now(), now()
     FROM generate_series(1, 100000) i`,
    [projectId]
  )

describe("time boundaries", () => {
  it("a contact leaves a `within 10 minutes` segment exactly when the window lapses (controlled clock)", async () => {
    let worker = await stack.start("worker")
    const segment = await secret("POST", "/segments", {
      name: "Visited recently",
      trackMembership: true,
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "event.visit", operator: "triggeredWithin", value: 10, unit: "minutes" }] }]
      }
    })
    const tracked = await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "clock@time.test", event: "visit" }
    })
    const visitedAt = Date.parse(tracked.json.data.timestamp)
    const contactId = tracked.json.data.contact
    const lapse = new Date(visitedAt + TEN_MINUTES).toISOString()

    // Entered now, with a durable timer at exactly the lapse.
    await eventually(async () => {
      const [timer] = await stack.query<{ due_at: Date }>("SELECT due_at FROM timers WHERE contact_id = $1", [contactId])
      expect(timer && new Date(timer.due_at).toISOString()).toBe(lapse)
    })
    const [entered] = await stack.query<{ exited_at: Date | null }>(
      "SELECT exited_at FROM segment_memberships WHERE segment_id = $1 AND contact_id = $2",
      [segment.json.id, contactId]
    )
    expect(entered!.exited_at).toBeNull()

    // Move the worker's clock past the lapse: the timer fires and the exit is stamped at the lapse itself.
    await worker.stop()
    worker = await stack.start("worker", { CLOCK_OFFSET_MS: String(TEN_MINUTES + 1_000) })
    const [exited] = await eventually(async () => {
      const rows = await stack.query<{ exited_at: Date | null }>(
        "SELECT exited_at FROM segment_memberships WHERE segment_id = $1 AND contact_id = $2",
        [segment.json.id, contactId]
      )
      expect(rows[0]!.exited_at).not.toBeNull()
      return rows
    }, 15_000)
    expect(new Date(exited!.exited_at!).toISOString()).toBe(lapse)
    const exitEvents = await eventually(async () => {
      const out = (await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.segment.visited-recently.exit`)).map((
        m
      ) => m.data)
      expect(out).toHaveLength(1)
      return out
    })
    expect(exitEvents[0].at).toBe(lapse)
    await worker.stop()
  }, 60_000)

  it("a timer that fires late still counts the occurrences in the window at its due time, not at the clock's", async () => {
    let worker = await stack.start("worker")
    // Member while clicked in the last 5 minutes or visited twice in the last hour.
    const segment = await secret("POST", "/segments", {
      name: "Engaged",
      condition: {
        logic: "OR",
        groups: [
          { filters: [{ field: "event.click", operator: "triggeredWithin", value: 5, unit: "minutes" }] },
          { filters: [{ field: "event.visit", operator: "triggeredAtLeast", value: 2, within: 1, unit: "hours" }] }
        ]
      }
    })
    const track = (event: string) =>
      request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "late@time.test", event } })
    const firstVisit = await track("visit")
    await track("visit")
    const click = await track("click")
    const contactId = firstVisit.json.data.contact
    const clickLapses = new Date(Date.parse(click.json.data.timestamp) + 5 * 60_000).toISOString()
    const visitsLapse = new Date(Date.parse(firstVisit.json.data.timestamp) + 60 * 60_000).toISOString()
    const membership = () =>
      stack.query<{ exited_at: Date | null }>(
        "SELECT exited_at FROM segment_memberships WHERE segment_id = $1 AND contact_id = $2",
        [segment.json.id, contactId]
      )

    // The soonest change is the click's lapse: the visits still count then, so the contact stays.
    await eventually(async () => {
      const [timer] = await stack.query<{ due_at: Date }>("SELECT due_at FROM timers WHERE contact_id = $1", [contactId])
      expect(timer && new Date(timer.due_at).toISOString()).toBe(clickLapses)
    })
    expect((await membership())[0]!.exited_at).toBeNull()

    // 100 minutes later both lapses are long past. Evaluated at the click's lapse the two visits are
    // still in their hour (read back that far, not from the clock's hour): the contact stays, and leaves
    // at the visits' own lapse.
    await worker.stop()
    worker = await stack.start("worker", { CLOCK_OFFSET_MS: String(100 * 60_000) })
    const [exited] = await eventually(async () => {
      const rows = await membership()
      expect(rows[0]!.exited_at).not.toBeNull()
      return rows
    }, 15_000)
    expect(new Date(exited!.exited_at!).toISOString()).toBe(visitsLapse)
    await worker.stop()
  }, 60_000)

  it("backfills a segment over 100k contacts in chunks while the project's other messages keep flowing", async () => {
    const worker = await stack.start("worker")
    await insertNumberedContacts(project.id)
    const segment = await secret("POST", "/segments", {
      name: "Upper half",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.n", operator: "greaterThan", value: 50000 }] }] }
    })
    const tracked = await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "during@bulk.test", event: "ping" }
    })
    let eventStoredAt: number | undefined
    let backfillDoneAt: number | undefined
    const deadline = Date.now() + 60_000
    while ((eventStoredAt === undefined || backfillDoneAt === undefined) && Date.now() < deadline) {
      if (eventStoredAt === undefined) {
        const rows = await stack.query("SELECT 1 FROM events WHERE id = $1", [tracked.json.data.event])
        if (rows.length > 0) eventStoredAt = Date.now()
      }
      if (backfillDoneAt === undefined) {
        const [row] = await stack.query<{ done: boolean }>("SELECT backfilled_version >= version AS done FROM segments WHERE id = $1", [
          segment.json.id
        ])
        if (row!.done) backfillDoneAt = Date.now()
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(backfillDoneAt).toBeDefined()
    // The tracked event did not wait for the whole backfill.
    expect(eventStoredAt).toBeDefined()
    expect(eventStoredAt!).toBeLessThanOrEqual(backfillDoneAt!)
    const [count] = await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
      [segment.json.id]
    )
    expect(count!.n).toBe(50000)
    expect((await secret("GET", `/segments/${segment.json.id}`)).json.memberCount).toBe(50000)
    const page = await secret("GET", `/segments/${segment.json.id}/contacts?page=2&pageSize=100`)
    expect(page.json).toMatchObject({ page: 2, pageSize: 100, total: 50000, totalPages: 500 })
    expect(page.json.data).toHaveLength(100)
    await worker.stop()
  }, 120_000)

  it("finishes a backfill after its worker is SIGKILLed mid-way, with no new traffic to wake the lanes", async () => {
    const quiet = await stack.createProject()
    const worker = await stack.start("worker")
    await insertNumberedContacts(quiet.id)
    const segments: Array<string> = []
    for (const [name, value] of [["Above 25k", 25000], ["Above 50k", 50000], ["Above 75k", 75000]] as const) {
      const created = await request(api.url, "POST", "/segments", {
        key: quiet.secretKey,
        body: { name, condition: { logic: "AND", groups: [{ filters: [{ field: "data.n", operator: "greaterThan", value }] }] } }
      })
      segments.push(created.json.id)
    }
    const behind = async () =>
      (await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM segments WHERE project_id = $1 AND backfilled_version < version", [
        quiet.id
      ]))[0]!.n
    const lanesDone = async () =>
      (await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_backfills b JOIN segments s ON s.id = b.segment_id WHERE s.project_id = $1",
        [quiet.id]
      ))[0]!.n
    // Killed once some lanes have done their part and the rest have not.
    await eventually(async () => expect(await lanesDone()).toBeGreaterThan(0), 30_000)
    await worker.stop("SIGKILL")
    expect(await behind()).toBeGreaterThan(0)
    // Its successor takes the partitions over when the leases expire, and finishes with nothing else arriving.
    const successor = await stack.start("worker")
    await eventually(async () => expect(await behind()).toBe(0), 60_000)
    for (const [index, id] of segments.entries()) {
      const [count] = await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
        [id]
      )
      expect(count!.n).toBe(75000 - index * 25000)
    }
    await successor.stop()
  }, 120_000)
})
