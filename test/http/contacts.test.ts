import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject
let other: TestProject

const call = (method: string, path: string, options: Parameters<typeof request>[3] = {}) =>
  request(api.url, method, path, { key: project.secretKey, ...options })

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("all")
  project = await stack.createProject("Acme")
  other = await stack.createProject("Other")
})
afterAll(async () => {
  await stack?.stop()
})

describe("project create", () => {
  it("prints exactly one JSON object with id, name and both keys", async () => {
    const { stdout } = await stack.cli("project", "create", "--name", "Cli")
    const lines = stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const created = JSON.parse(lines[0]!)
    expect(Object.keys(created).sort()).toEqual(["id", "name", "publicKey", "secretKey"])
    expect(created.publicKey).toMatch(/^pk_/)
    expect(created.secretKey).toMatch(/^sk_/)
    const [row] = await stack.query<{ public_key_hash: Uint8Array }>(
      "SELECT public_key_hash FROM projects WHERE id = $1",
      [created.id]
    )
    // Only the hash is stored.
    expect(Buffer.from(row!.public_key_hash).toString("utf8")).not.toContain("pk_")
  })
})

describe("POST /contacts", () => {
  it("creates (201, isNew) then updates (200, isUpdate) by case-insensitive email", async () => {
    const created = await call("POST", "/contacts", { body: { email: "Ada@Example.com", data: { plan: "pro" } } })
    expect(created.status).toBe(201)
    expect(created.json._meta).toEqual({ isNew: true, isUpdate: false })
    expect(created.json).toMatchObject({ email: "ada@example.com", subscribed: true, data: { plan: "pro" }, snoozedUntil: null })

    const updated = await call("POST", "/contacts", { body: { email: "ADA@example.COM", subscribed: false, data: { seats: 3 } } })
    expect(updated.status).toBe(200)
    expect(updated.json._meta).toEqual({ isNew: false, isUpdate: true })
    expect(updated.json.id).toBe(created.json.id)
    expect(updated.json.subscribed).toBe(false)
    expect(updated.json.data).toEqual({ plan: "pro", seats: 3 })

    // Omitting subscribed keeps the state.
    const again = await call("POST", "/contacts", { body: { email: "ada@example.com" } })
    expect(again.json.subscribed).toBe(false)
  })

  it("applies every custom-data rule", async () => {
    await call("POST", "/contacts", { body: { email: "rules@example.com", data: { keep: "x", drop: 1, blank: "kept" } } })
    const res = await call("POST", "/contacts", {
      body: {
        email: "rules@example.com",
        data: {
          drop: null,
          blank: "",
          once: { value: "transient", persistent: false },
          email: "evil@example.com",
          plunk_id: "x",
          manageUrl: "x",
          profile: { tier: "gold" }
        }
      }
    })
    expect(res.json.data).toEqual({ keep: "x", blank: "kept", profile: { tier: "gold" } })
    expect(res.json.email).toBe("rules@example.com")
  })

  it("answers a bare 400 { error } without email", async () => {
    const res = await call("POST", "/contacts", { body: { data: { a: 1 } } })
    expect(res.status).toBe(400)
    expect(res.json).toEqual({ error: expect.any(String) })
  })

  it("answers 422 VALIDATION_ERROR with field errors for a bad email or types", async () => {
    const res = await call("POST", "/contacts", { body: { email: "not-an-email", subscribed: "yes" } })
    expect(res.status).toBe(422)
    expect(res.json.success).toBe(false)
    expect(res.json.error.code).toBe("VALIDATION_ERROR")
    expect(res.json.error.statusCode).toBe(422)
    expect(res.json.error.requestId).toMatch(/^req_/)
    const fields = res.json.error.errors.map((e: { field: string }) => e.field).sort()
    expect(fields).toEqual(["email", "subscribed"])
    const email = res.json.error.errors.find((e: { field: string }) => e.field === "email")
    expect(email).toMatchObject({ code: "invalid_string", message: expect.stringContaining("email") })
    expect(typeof res.json.timestamp).toBe("string")
  })

  it("answers 400 for malformed JSON and 413 for an oversized body, never 500", async () => {
    const bad = await call("POST", "/contacts", { rawBody: '{"email": ' })
    expect(bad.status).toBe(400)
    expect(bad.json.error.code).toBe("INVALID_JSON")
    const big = await call("POST", "/contacts", { body: { email: "big@example.com", data: { blob: "x".repeat(2 * 1024 * 1024) } } })
    expect(big.status).toBe(413)
    expect(big.json.error.code).toBe("PAYLOAD_TOO_LARGE")
    const notObject = await call("POST", "/contacts", { rawBody: "[1,2]" })
    expect(notObject.status).toBe(422)
  })

  it("rejects data beyond the limits with 422", async () => {
    const data = Object.fromEntries(Array.from({ length: 501 }, (_, i) => [`k${i}`, i]))
    const res = await call("POST", "/contacts", { body: { email: "many@example.com", data } })
    expect(res.status).toBe(422)
    expect(res.json.error.errors[0].field).toBe("data")
  })
})

describe("GET/PATCH/DELETE /contacts/:id", () => {
  it("reads, patches and deletes a contact", async () => {
    const created = await call("POST", "/contacts", { body: { email: "patch@example.com", data: { a: 1, b: 2 } } })
    const id = created.json.id
    const got = await call("GET", `/contacts/${id}`)
    expect(got.status).toBe(200)
    expect(got.json._meta).toBeUndefined()

    const patched = await call("PATCH", `/contacts/${id}`, {
      body: { email: "Patched@Example.com", subscribed: false, data: { a: null, c: "new" } }
    })
    expect(patched.status).toBe(200)
    expect(patched.json).toMatchObject({ email: "patched@example.com", subscribed: false, data: { b: 2, c: "new" } })

    await call("POST", "/contacts", { body: { email: "taken@example.com" } })
    const dup = await call("PATCH", `/contacts/${id}`, { body: { email: "TAKEN@example.com" } })
    expect(dup.status).toBe(409)
    expect(dup.json.error.code).toBe("CONTACT_EXISTS")

    const deleted = await call("DELETE", `/contacts/${id}`)
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe("")
    expect((await call("GET", `/contacts/${id}`)).status).toBe(404)
    expect((await call("DELETE", `/contacts/${id}`)).status).toBe(404)
  })

  it("answers 404 for malformed and unknown ids", async () => {
    expect((await call("GET", "/contacts/not-a-uuid")).status).toBe(404)
    const res = await call("GET", "/contacts/0190a3c2-0000-7000-8000-000000000000")
    expect(res.status).toBe(404)
    expect(res.json.error.code).toBe("NOT_FOUND")
  })

  it("keeps projects apart: another project's contact is 404 and unchanged", async () => {
    const mine = await call("POST", "/contacts", { body: { email: "private@example.com", data: { secret: 1 } } })
    const id = mine.json.id
    const theirs = (method: string, body?: unknown) => request(api.url, method, `/contacts/${id}`, { key: other.secretKey, body })
    expect((await theirs("GET")).status).toBe(404)
    expect((await theirs("PATCH", { data: { secret: 2 } })).status).toBe(404)
    expect((await theirs("DELETE")).status).toBe(404)
    const list = await request(api.url, "GET", "/contacts?search=private", { key: other.secretKey })
    expect(list.json.data).toEqual([])
    const after = await call("GET", `/contacts/${id}`)
    expect(after.json.data).toEqual({ secret: 1 })
    // The same email in another project is a different contact.
    const same = await request(api.url, "POST", "/contacts", { key: other.secretKey, body: { email: "private@example.com" } })
    expect(same.status).toBe(201)
    expect(same.json.id).not.toBe(id)
  })
})

describe("GET /contacts", () => {
  it("pages with cursors, total on the first page only, search, filter and sort", async () => {
    const fresh = await stack.createProject("Paging")
    const list = (query: string) => request(api.url, "GET", `/contacts${query}`, { key: fresh.secretKey })
    for (let i = 0; i < 25; i++) {
      await request(api.url, "POST", "/contacts", {
        key: fresh.secretKey,
        body: { email: `user${String(i).padStart(2, "0")}@page.test`, subscribed: i % 5 !== 0 }
      })
    }
    const first = await list("")
    expect(first.json.data).toHaveLength(20)
    expect(first.json.total).toBe(25)
    expect(first.json.hasMore).toBe(true)
    // Newest first by default.
    expect(first.json.data[0].email).toBe("user24@page.test")
    const second = await list(`?cursor=${first.json.cursor}`)
    expect(second.json.data).toHaveLength(5)
    expect(second.json.total).toBe(0)
    expect(second.json.hasMore).toBe(false)
    const seen = new Set([...first.json.data, ...second.json.data].map((c: { id: string }) => c.id))
    expect(seen.size).toBe(25)

    const clamped = await list("?limit=1000")
    expect(clamped.json.data).toHaveLength(25)
    const small = await list("?limit=0")
    expect(small.json.data).toHaveLength(1)
    const fallback = await list("?limit=abc&sort=bogus&dir=sideways")
    expect(fallback.json.data).toHaveLength(20)
    expect(fallback.json.data[0].email).toBe("user24@page.test")

    const byEmail = await list("?sort=email&dir=asc&limit=10")
    expect(byEmail.json.data[0].email).toBe("user00@page.test")
    const byEmail2 = await list(`?sort=email&dir=asc&limit=10&cursor=${byEmail.json.cursor}`)
    expect(byEmail2.json.data[0].email).toBe("user10@page.test")

    const search = await list("?search=USER1")
    expect(search.json.total).toBe(10)
    const unsubscribed = await list("?subscribed=false")
    expect(unsubscribed.json.total).toBe(5)
    const badCursor = await list("?cursor=garbage")
    expect(badCursor.status).toBe(400)
    // Well-formed JSON that is not one of our cursors is a 400 too, never a 500.
    const forged = Buffer.from(JSON.stringify(["1", "x"])).toString("base64url")
    expect((await list(`?cursor=${forged}`)).status).toBe(400)
    // NUL cannot be stored or searched for: the request is refused like any unstorable text.
    const nul = await list("?search=a%00b")
    expect(nul.status).toBe(422)
    expect(nul.json.error.errors[0].field).toBe("search")
  })
})

describe("GET /contacts filtered by segment and custom data", () => {
  it("keeps a segment's members (dynamic: its condition now; static: its members), a field's holders or its value, within the project", async () => {
    const fresh = await stack.createProject("Filters")
    const key = fresh.secretKey
    const list = async (query: string) => {
      const reply = await request(api.url, "GET", `/contacts?sort=email&dir=asc${query}`, { key })
      return { status: reply.status, json: reply.json, emails: (reply.json.data ?? []).map((c: { email: string }) => c.email) }
    }
    const people = [
      { email: "a@filter.test", subscribed: true, data: { plan: "pro", seats: 5, team: { tier: "gold" } } },
      { email: "b@filter.test", subscribed: false, data: { plan: "pro", seats: 2 } },
      { email: "c@filter.test", subscribed: true, data: { plan: "free" } },
      { email: "d@filter.test", subscribed: true }
    ]
    for (const body of people) expect((await request(api.url, "POST", "/contacts", { key, body })).status).toBe(201)
    const dynamic = await request(api.url, "POST", "/segments", {
      key,
      body: { name: "Pro", condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } }
    })
    expect(dynamic.status).toBe(201)
    const staticSegment = await request(api.url, "POST", "/segments", { key, body: { name: "Picked", type: "STATIC" } })
    expect(staticSegment.status).toBe(201)
    const added = await request(api.url, "POST", `/segments/${staticSegment.json.id}/members`, {
      key,
      body: { emails: ["c@filter.test", "d@filter.test"] }
    })
    expect(added.status, JSON.stringify(added.json)).toBeLessThan(300)

    const pro = await list(`&segment=${dynamic.json.id}`)
    expect(pro.emails).toEqual(["a@filter.test", "b@filter.test"])
    expect(pro.json.total).toBe(2)
    expect((await list(`&segment=${staticSegment.json.id}`)).emails).toEqual(["c@filter.test", "d@filter.test"])
    // With the subscription filter: both apply.
    expect((await list(`&segment=${dynamic.json.id}&subscribed=true`)).emails).toEqual(["a@filter.test"])
    expect((await list("&field=data.plan")).emails).toEqual(["a@filter.test", "b@filter.test", "c@filter.test"])
    expect((await list("&field=data.plan&value=free")).emails).toEqual(["c@filter.test"])
    // Numbers and nested values are compared as they read.
    expect((await list("&field=data.seats&value=5")).emails).toEqual(["a@filter.test"])
    expect((await list("&field=data.team.tier&value=gold")).emails).toEqual(["a@filter.test"])
    expect((await list("&field=data.plan&value=none")).json.total).toBe(0)

    // Another project's segment, an unknown one, a field that is not custom data, a value without a field: 422 at the parameter.
    const otherSegment = await request(api.url, "POST", "/segments", { key: other.secretKey, body: { name: "Theirs", type: "STATIC" } })
    for (
      const [query, field] of [
        [`&segment=${otherSegment.json.id}`, "segment"],
        ["&segment=not-a-segment", "segment"],
        ["&field=email&value=a@filter.test", "field"],
        ["&value=pro", "value"]
      ] as const
    ) {
      const refused = await list(query)
      expect(refused.status, query).toBe(422)
      expect(refused.json.error.errors[0].field, query).toBe(field)
    }
  })
})

describe("lookup and fields", () => {
  it("looks up at most 500 emails", async () => {
    await call("POST", "/contacts", { body: { email: "known@lookup.test" } })
    const res = await call("POST", "/contacts/lookup", { body: { emails: ["KNOWN@lookup.test", "unknown@lookup.test"] } })
    expect(res.status).toBe(200)
    expect(res.json.results[0]).toMatchObject({ email: "KNOWN@lookup.test", exists: true })
    expect(res.json.results[1]).toEqual({ email: "unknown@lookup.test", exists: false, contact: null })
    const tooMany = await call("POST", "/contacts/lookup", {
      body: { emails: Array.from({ length: 501 }, (_, i) => `u${i}@x.test`) }
    })
    expect(tooMany.status).toBe(422)
  })

  it("lists fields with inferred types (kept once inferred) and coverage", async () => {
    const fresh = await stack.createProject("Fields")
    const post = (body: unknown) => request(api.url, "POST", "/contacts", { key: fresh.secretKey, body })
    await post({ email: "f1@fields.test", data: { age: 30, vip: true, since: "2024-01-02", city: "Oslo", profile: { tier: "gold" } } })
    await post({ email: "f2@fields.test", data: { age: "thirty", city: "Rome" } })
    const res = await request(api.url, "GET", "/contacts/fields", { key: fresh.secretKey })
    const byName = Object.fromEntries(res.json.fields.map((f: { field: string }) => [f.field, f]))
    expect(byName.email).toEqual({ field: "email", type: "string", isCustom: false, coverage: 1 })
    expect(byName["data.age"]).toEqual({ field: "data.age", type: "number", isCustom: true, coverage: 1 })
    expect(byName["data.vip"]).toMatchObject({ type: "boolean", coverage: 0.5 })
    expect(byName["data.since"]).toMatchObject({ type: "date" })
    expect(byName["data.profile.tier"]).toMatchObject({ type: "string", coverage: 0.5 })

    const values = await request(api.url, "GET", "/contacts/fields/data.city/values", { key: fresh.secretKey })
    expect(values.json).toMatchObject({ field: "data.city", data: ["Oslo", "Rome"], total: 2, page: 1, totalPages: 1 })
    const page2 = await request(api.url, "GET", "/contacts/fields/data.city/values?pageSize=1&page=2", { key: fresh.secretKey })
    expect(page2.json.data).toEqual(["Rome"])
    const emails = await request(api.url, "GET", "/contacts/fields/email/values", { key: fresh.secretKey })
    expect(emails.json.data).toEqual(["f1@fields.test", "f2@fields.test"])
    expect((await request(api.url, "GET", "/contacts/fields/data.nope/values", { key: fresh.secretKey })).status).toBe(404)
    expect((await request(api.url, "GET", "/contacts/fields/constructor/values", { key: fresh.secretKey })).status).toBe(404)

    const usage = await request(api.url, "GET", "/contacts/fields/data.city/usage", { key: fresh.secretKey })
    expect(usage.json).toEqual({ field: "data.city", segments: [], campaigns: [], workflows: [] })

    const removed = await request(api.url, "DELETE", "/contacts/fields/data.city", { key: fresh.secretKey })
    expect(removed.json).toEqual({ field: "data.city", deleted: true, contactsUpdated: 2 })
    const after = await request(api.url, "GET", "/contacts/fields", { key: fresh.secretKey })
    expect(after.json.fields.map((f: { field: string }) => f.field)).not.toContain("data.city")
    const contacts = await request(api.url, "GET", "/contacts", { key: fresh.secretKey })
    for (const contact of contacts.json.data) expect(contact.data.city).toBeUndefined()
    expect((await request(api.url, "DELETE", "/contacts/fields/email", { key: fresh.secretKey })).status).toBe(422)
    // Another project cannot see or delete this project's fields.
    expect((await request(api.url, "DELETE", "/contacts/fields/data.age", { key: other.secretKey })).status).toBe(404)
  })
})
