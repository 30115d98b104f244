import { describe, expect, it } from "vitest"
import { eventually, readStream } from "../support/nats.ts"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("all", (context) => ({ stack, api, project } = context))

const secret = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })
const track = (body: unknown) => request(api.url, "POST", "/v1/track", { key: project.publicKey, body })
const pro = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
const outEvents = async (name: string) =>
  (await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.${name}`)).map((m) => m.data)
/** Stored (actor-written) current members, by email. */
const stored = async (segmentId: string) =>
  (await stack.query<{ email: string }>(
    `SELECT c.email FROM segment_memberships m JOIN contacts c ON c.id = m.contact_id
     WHERE m.segment_id = $1 AND m.exited_at IS NULL ORDER BY c.email`,
    [segmentId]
  )).map((r) => r.email)
/** Live members (the segment's contacts endpoint), by email. */
const members = async (segmentId: string) =>
  (await secret("GET", `/segments/${segmentId}/contacts?pageSize=100`)).json.data.map((c: { email: string }) => c.email).sort()

describe("segments API", () => {
  it("creates, lists newest first, reads, updates and deletes", async () => {
    const a = await secret("POST", "/segments", { name: "Pro users", condition: pro })
    expect(a.status).toBe(201)
    expect(a.json).toMatchObject({
      name: "Pro users",
      type: "DYNAMIC",
      trackMembership: false,
      memberCount: 0,
      projectId: project.id,
      description: null
    })
    const b = await secret("POST", "/segments", { name: "Hand picked", type: "STATIC", condition: pro, description: "VIPs" })
    expect(b.json).toMatchObject({ type: "STATIC", condition: null, description: "VIPs" })
    const list = await secret("GET", "/segments")
    expect(Array.isArray(list.json)).toBe(true)
    expect(list.json.slice(0, 2).map((s: { id: string }) => s.id)).toEqual([b.json.id, a.json.id])
    expect((await secret("GET", `/segments/${a.json.id}`)).json.name).toBe("Pro users")
    const renamed = await secret("PATCH", `/segments/${a.json.id}`, { name: "Paying", trackMembership: true })
    expect(renamed.json).toMatchObject({ name: "Paying", trackMembership: true })
    expect((await secret("PATCH", `/segments/${b.json.id}`, { condition: pro })).status).toBe(422)
    expect((await secret("DELETE", `/segments/${b.json.id}`)).status).toBe(204)
    expect((await secret("GET", `/segments/${b.json.id}`)).status).toBe(404)
  })

  it("validates: LegacyError 400 without a name or a condition, 422 with the path of the offending filter, lengths", async () => {
    const missing = await secret("POST", "/segments", { name: "No condition" })
    expect(missing.status).toBe(400)
    expect(missing.json).toEqual({ error: "Condition is required and must be an object for DYNAMIC segments" })
    for (const body of [{ condition: pro }, { name: " ", condition: pro }, { type: "STATIC" }]) {
      const noName = await secret("POST", "/segments", body)
      expect(noName.status, JSON.stringify(body)).toBe(400)
      expect(noName.json).toEqual({ error: "Name is required" })
    }
    const bad = await secret("POST", "/segments", {
      name: "Bad",
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "data.a", operator: "equals", value: 1 }] }, { filters: [{ field: "data.a", operator: "around" }] }]
      }
    })
    expect(bad.status).toBe(422)
    expect(bad.json.error.errors).toEqual([expect.objectContaining({ field: "condition.groups[1].filters[0].operator" })])
    expect((await secret("POST", "/segments", { name: "x".repeat(101), condition: pro })).status).toBe(422)
    expect((await secret("POST", "/segments", { name: "x", description: "y".repeat(501), condition: pro })).status).toBe(422)
    const unknown = await secret("POST", "/segments", {
      name: "Ref",
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "segment.0190a3c2-0000-7000-8000-000000000000", operator: "memberOfSegment" }] }]
      }
    })
    expect(unknown.status).toBe(422)
    const huge = await secret("POST", "/segments", {
      name: "Huge",
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "event.x", operator: "triggeredAtLeast", value: 1, within: 1e300, unit: "days" }] }]
      }
    })
    expect(huge.status).toBe(422)
  })

  it("rejects cycles and refuses to delete a referenced segment", async () => {
    const base = await secret("POST", "/segments", { name: "Base", condition: pro })
    const ref = (id: string) => ({ logic: "AND", groups: [{ filters: [{ field: `segment.${id}`, operator: "memberOfSegment" }] }] })
    const top = await secret("POST", "/segments", { name: "Top", condition: ref(base.json.id) })
    expect(top.status).toBe(201)
    const cycle = await secret("PATCH", `/segments/${base.json.id}`, { condition: ref(top.json.id) })
    expect(cycle.status).toBe(422)
    expect(cycle.json.error.errors[0].code).toBe("cycle")
    expect((await secret("DELETE", `/segments/${base.json.id}`)).status).toBe(409)
  })

  it("keeps projects apart", async () => {
    const other = await stack.createProject()
    const mine = await secret("POST", "/segments", { name: "Mine", condition: pro })
    expect((await secret("GET", `/segments/${mine.json.id}`, undefined, other.secretKey)).status).toBe(404)
    expect((await secret("DELETE", `/segments/${mine.json.id}`, undefined, other.secretKey)).status).toBe(404)
    expect((await secret("GET", "/segments", undefined, other.secretKey)).json).toEqual([])
  })
})

describe("dynamic membership", () => {
  it("enters and exits within milliseconds of the change, emitting events only when tracked", async () => {
    const tracked = await secret("POST", "/segments", { name: "Gold Tier!", condition: pro, trackMembership: true })
    const silent = await secret("POST", "/segments", { name: "Silent", condition: pro })
    await track({ email: "gold@seg.test", event: "upgraded", data: { plan: "pro" } })
    await eventually(async () => expect(await members(tracked.json.id)).toContain("gold@seg.test"))
    const entry = await eventually(async () => {
      const found = (await outEvents("segment.gold-tier.entry")).filter((e) => e.email === "gold@seg.test")
      expect(found).toHaveLength(1)
      return found[0]
    })
    expect(entry.data).toEqual({ segmentId: tracked.json.id, segmentName: "Gold Tier!" })
    const stored = await eventually(async () => {
      const [row] = await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
        [silent.json.id]
      )
      expect(row!.n).toBe(1)
      return row
    })
    expect(stored).toBeDefined()

    await track({ email: "gold@seg.test", event: "downgraded", data: { plan: "free" } })
    await eventually(async () =>
      expect((await outEvents("segment.gold-tier.exit")).filter((e) => e.email === "gold@seg.test")).toHaveLength(1)
    )
    await eventually(async () => expect((await secret("GET", `/segments/${tracked.json.id}`)).json.memberCount).toBe(0))
    expect(await outEvents("segment.silent.entry")).toEqual([])
    // Entry and exit are recorded as the contact's events too (usable as workflow triggers).
    const contactId = (await secret("POST", "/contacts/lookup", { emails: ["gold@seg.test"] })).json.results[0].contact.id
    await eventually(async () => {
      const names = (await secret("GET", `/events/contact/${contactId}`)).json.data.map((e: { name: string }) => e.name)
      expect(names).toEqual(expect.arrayContaining(["segment.gold-tier.entry", "segment.gold-tier.exit"]))
    })
  })

  it("evaluates a contact created by /v1/track against every segment, not only those its event touches", async () => {
    const segment = await secret("POST", "/segments", {
      name: "Acme people",
      condition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "@acme.test" }] }] }
    })
    await track({ email: "newbie@acme.test", event: "signed_up" })
    // The stored membership, written by the actor (the live list would match as soon as the contact exists).
    await eventually(async () => {
      const [row] = await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
        [segment.json.id]
      )
      expect(row!.n).toBe(1)
    })
  })

  it("follows direct contact writes and segments that read other segments", async () => {
    const base = await secret("POST", "/segments", {
      name: "Direct base",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.vip", operator: "equals", value: true }] }] }
    })
    const derived = await secret("POST", "/segments", {
      name: "Derived",
      condition: {
        logic: "AND",
        groups: [{
          filters: [{ field: `segment.${base.json.id}`, operator: "memberOfSegment" }, {
            field: "subscribed",
            operator: "equals",
            value: true
          }]
        }]
      }
    })
    await secret("POST", "/contacts", { email: "vip@seg.test", data: { vip: true } })
    await eventually(async () => expect(await members(derived.json.id)).toEqual(["vip@seg.test"]))
    // The listing evaluates live; the membership row follows when the contact's lane has the derived
    // segment (a backfill of the base may have found the contact first).
    await eventually(async () => {
      const [membership] = await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
        [derived.json.id]
      )
      expect(membership!.n).toBe(1)
    })
    await secret("POST", "/contacts", { email: "vip@seg.test", subscribed: false })
    await eventually(async () => {
      const [row] = await stack.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
        [derived.json.id]
      )
      expect(row!.n).toBe(0)
    })
  })

  it("backfills a new segment over existing contacts, and compute emits entry/exit while refresh only counts", async () => {
    for (let i = 0; i < 30; i++) await secret("POST", "/contacts", { email: `bf${i}@seg.test`, data: { score: i } })
    const segment = await secret("POST", "/segments", {
      name: "High score",
      trackMembership: true,
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.score", operator: "greaterThanOrEqual", value: 20 }] }] }
    })
    await eventually(async () => expect((await secret("GET", `/segments/${segment.json.id}`)).json.memberCount).toBe(10))
    // No entry events for the initial population.
    expect(await outEvents("segment.high-score.entry")).toEqual([])
    // Contacts changed behind the engine's back (straight in the database): refresh counts live, compute fixes and emits.
    await stack.query("UPDATE contacts SET data = jsonb_build_object('score', 99) WHERE email IN ('bf0@seg.test', 'bf1@seg.test')")
    const refreshed = await secret("POST", `/segments/${segment.json.id}/refresh`)
    expect(refreshed.json.memberCount).toBe(12)
    const [before] = await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL",
      [segment.json.id]
    )
    expect(before!.n).toBe(10)
    expect((await secret("POST", `/segments/${segment.json.id}/compute`)).status).toBe(202)
    await eventually(async () => {
      const entries = (await outEvents("segment.high-score.entry")).map((e) => e.email).sort()
      expect(entries).toEqual(["bf0@seg.test", "bf1@seg.test"])
    })
  })
})

describe("static segments", () => {
  it("adds and removes members by email, with events when tracked; 422 on a dynamic segment", async () => {
    const segment = await secret("POST", "/segments", { name: "Beta testers", type: "STATIC", trackMembership: true })
    await secret("POST", "/contacts", { email: "known@static.test" })
    const added = await secret("POST", `/segments/${segment.json.id}/members`, {
      emails: ["KNOWN@static.test", "new@static.test", "ghost@static.test"]
    })
    expect(added.json).toEqual({ added: 1, created: 0, notFound: ["new@static.test", "ghost@static.test"] })
    const created = await secret("POST", `/segments/${segment.json.id}/members`, {
      emails: ["new@static.test"],
      createMissing: true,
      subscribed: false
    })
    expect(created.json).toEqual({ added: 1, created: 1, notFound: [] })
    expect(await members(segment.json.id)).toEqual(["known@static.test", "new@static.test"])
    expect((await secret("GET", `/segments/${segment.json.id}`)).json.memberCount).toBe(2)
    const removed = await secret("DELETE", `/segments/${segment.json.id}/members`, { emails: ["known@static.test"] })
    expect(removed.json).toEqual({ removed: 1, notFound: [] })
    await eventually(async () => {
      expect((await outEvents("segment.beta-testers.entry")).map((e) => e.email).sort()).toEqual(["known@static.test", "new@static.test"])
      expect((await outEvents("segment.beta-testers.exit")).map((e) => e.email)).toEqual(["known@static.test"])
    })
    expect((await secret("POST", `/segments/${segment.json.id}/members`, { emails: ["not-an-email"], createMissing: true })).status).toBe(
      422
    )
    const dynamic = await secret("POST", "/segments", { name: "Dyn", condition: pro })
    expect((await secret("POST", `/segments/${dynamic.json.id}/members`, { emails: ["a@b.co"] })).status).toBe(422)
  })
})

describe("recomputation after indirect changes", () => {
  it("follows static membership changes, deleted events and deleted fields", async () => {
    const list = await secret("POST", "/segments", { name: "Invitees", type: "STATIC" })
    const invited = await secret("POST", "/segments", {
      name: "Invited",
      condition: { logic: "AND", groups: [{ filters: [{ field: `segment.${list.json.id}`, operator: "memberOfSegment" }] }] }
    })
    await secret("POST", "/contacts", { email: "guest@indirect.test", data: { tier: "vip" } })
    await secret("POST", `/segments/${list.json.id}/members`, { emails: ["guest@indirect.test"] })
    await eventually(async () => expect(await stored(invited.json.id)).toEqual(["guest@indirect.test"]))
    await secret("DELETE", `/segments/${list.json.id}/members`, { emails: ["guest@indirect.test"] })
    await eventually(async () => expect(await stored(invited.json.id)).toEqual([]))

    const clickers = await secret("POST", "/segments", {
      name: "Clickers",
      condition: { logic: "AND", groups: [{ filters: [{ field: "event.indirect_click", operator: "triggered" }] }] }
    })
    await track({ email: "guest@indirect.test", event: "indirect_click" })
    await eventually(async () => expect(await stored(clickers.json.id)).toEqual(["guest@indirect.test"]))
    await secret("DELETE", "/events/indirect_click")
    await eventually(async () => expect(await stored(clickers.json.id)).toEqual([]))

    const vips = await secret("POST", "/segments", {
      name: "VIP tier",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "vip" }] }] }
    })
    await eventually(async () => expect(await stored(vips.json.id)).toContain("guest@indirect.test"))
    await secret("DELETE", "/contacts/fields/data.tier")
    await eventually(async () => expect(await stored(vips.json.id)).toEqual([]))
  })
})

describe("contacts coming and going", () => {
  it("evaluates contacts created through a static segment, and a deleted contact exits its tracked segments", async () => {
    const domain = await secret("POST", "/segments", {
      name: "Created domain",
      trackMembership: true,
      condition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "@created.test" }] }] }
    })
    const list = await secret("POST", "/segments", { name: "Imported", type: "STATIC" })
    await secret("POST", `/segments/${list.json.id}/members`, { emails: ["someone@created.test"], createMissing: true })
    await eventually(async () => expect(await stored(domain.json.id)).toEqual(["someone@created.test"]))

    const id = (await secret("POST", "/contacts/lookup", { emails: ["someone@created.test"] })).json.results[0].contact.id
    expect((await secret("DELETE", `/contacts/${id}`)).status).toBe(204)
    await eventually(async () => {
      const exits = (await outEvents("segment.created-domain.exit")).filter((e) => e.contactId === id)
      expect(exits).toHaveLength(1)
      expect(exits[0].email).toBe("someone@created.test")
    })
    expect((await secret("GET", `/segments/${domain.json.id}`)).json.memberCount).toBe(0)
  })
})

describe("usage", () => {
  it("lists the segments that reference a field or an event", async () => {
    await secret("POST", "/contacts", { email: "usage@seg.test", data: { region: "eu" } })
    const segment = await secret("POST", "/segments", {
      name: "EU buyers",
      condition: {
        logic: "AND",
        groups: [{
          filters: [{ field: "data.region", operator: "equals", value: "eu" }, { field: "event.checkout", operator: "triggered" }]
        }]
      }
    })
    const field = await secret("GET", "/contacts/fields/data.region/usage")
    expect(field.json.segments).toEqual([{ id: segment.json.id, name: "EU buyers" }])
    const event = await secret("GET", "/events/checkout/usage")
    expect(event.json.segments).toEqual([{ id: segment.json.id, name: "EU buyers" }])
  })
})
