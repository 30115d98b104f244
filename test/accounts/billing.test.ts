/**
 * Billing limits and consumption on a real sending stack (api + worker + SMTP sink): the monthly
 * transactional cap refuses /v1/send with 403 BILLING_LIMIT_EXCEEDED, consumption counts the emails the
 * relay accepted, each once; every member sees the caps and the usage, an ADMIN sets the caps. Without
 * Stripe settings, billing is off.
 */
import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"
import { Browser, joinProject, signUp } from "./support.ts"

const TEST_SENDS_PER_HOUR = 3

let context: MailContext
withMailStack((ready) => (context = ready), { CAMPAIGN_TEST_SENDS_PER_HOUR: String(TEST_SENDS_PER_HOUR) })

type Caps = Record<"transactional" | "campaigns" | "workflows" | "inbound", number | null>
const noLimits: Caps = { transactional: null, campaigns: null, workflows: null, inbound: null }

/** A new project of `owner`'s, its own sending domain verified, with these monthly caps. */
const ownedProject = async (owner: Browser, name: string, limits: Partial<Caps>) => {
  const created = await owner.post("/users/@me/projects", { name })
  expect(created.status).toBe(201)
  const domain = `${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.test`
  await verifyDomain(context, created.json.secretKey, domain)
  expect((await owner.call("PUT", `/users/@me/projects/${created.json.id}/billing-limits`, { ...noLimits, ...limits })).status).toBe(200)
  return { id: created.json.id as string, key: created.json.secretKey as string, from: `news@${domain}` }
}

/** The recipients of the mail the SMTP sink received, among `addresses`. */
const delivered = (addresses: ReadonlyArray<string>) =>
  addresses.filter((address) => context.smtp.messages.some((mail) => mail.envelopeTo.includes(address)))

const usage = async (owner: Browser, projectId: string) =>
  (await owner.get(`/users/@me/projects/${projectId}/billing-consumption`)).json.usage

const send = (to: Array<string>) =>
  request(context.api.url, "POST", "/v1/send", {
    key: context.project.secretKey,
    body: { from: "hello@acme.test", subject: "Hi", body: "<p>Hello</p>", to }
  })

/** An OWNER (the project was made with the CLI: the first user adopts it) and a MEMBER. */
const people = async () => {
  const owner = new Browser(context.api.url)
  expect((await owner.post("/auth/signup", { email: "boss@example.com", password: "boss password" })).status).toBe(201)
  const member = new Browser(context.api.url)
  expect((await member.post("/auth/signup", { email: "staff@example.com", password: "staff password" })).status).toBe(201)
  await joinProject(owner, context.project.id, member, "staff@example.com")
  return { owner, member }
}

describe("billing limits", () => {
  it("caps transactional sends per month, counts what was sent once, and lifts when the cap is raised", async () => {
    const { owner, member } = await people()
    const path = `/users/@me/projects/${context.project.id}/billing-limits`
    expect((await owner.get(path)).json).toEqual({ transactional: null, campaigns: null, workflows: null, inbound: null })
    const limits = { transactional: 3, campaigns: null, workflows: 10, inbound: null }
    expect((await member.call("PUT", path, limits)).status).toBe(403)
    const put = await owner.call("PUT", path, limits)
    expect(put.status).toBe(200)
    expect(put.json).toEqual(limits)
    expect((await owner.call("PUT", path, { ...limits, transactional: -1 })).status).toBe(422)

    const first = await send(["a@example.org", "b@example.org"])
    expect(first.status).toBe(200)
    const over = await send(["c@example.org", "d@example.org"])
    expect(over.status).toBe(403)
    expect(over.json.error).toMatchObject({
      code: "BILLING_LIMIT_EXCEEDED",
      details: { category: "transactional", limit: 3, used: 2 }
    })
    // Nothing of the refused request was queued (not even its contacts' mail).
    const queued = await context.stack.query<{ n: number }>("SELECT count(*)::int AS n FROM emails WHERE project_id = $1", [
      context.project.id
    ])
    expect(queued[0]!.n).toBe(2)
    const third = await send(["c@example.org"])
    expect(third.status).toBe(200)
    expect((await send(["d@example.org"])).status).toBe(403)

    for (const item of [...first.json.data.emails, ...third.json.data.emails]) await emailStatus(context, item.email, "SENT")
    const consumption = await owner.get(`/users/@me/projects/${context.project.id}/billing-consumption`)
    expect(consumption.status).toBe(200)
    expect(consumption.json.usage).toEqual({ transactional: 3, campaigns: 0, workflows: 0, inbound: 0 })
    expect(consumption.json.limits).toEqual(limits)
    expect(new Date(consumption.json.periodStart).getUTCDate()).toBe(1)
    // A second delivery attempt of the same email is the same row: still counted once.
    await context.stack.query("UPDATE emails SET attempts = attempts + 1 WHERE project_id = $1", [context.project.id])
    expect((await owner.get(`/users/@me/projects/${context.project.id}/billing-consumption`)).json.usage.transactional).toBe(3)
    // Every member sees the month's usage and the caps; only an ADMIN changes them (above).
    const seenByMember = await member.get(`/users/@me/projects/${context.project.id}/billing-consumption`)
    expect(seenByMember.status).toBe(200)
    expect(seenByMember.json.usage.transactional).toBe(3)
    expect((await member.get(path)).json).toEqual(limits)

    await owner.call("PUT", path, { ...limits, transactional: null })
    expect((await send(["d@example.org"])).status).toBe(200)
  })

  it("answers 404 BILLING_DISABLED for checkout, portal, invoices and the Stripe webhook without Stripe settings", async () => {
    const owner = new Browser(context.api.url)
    await owner.post("/auth/login", { email: "boss@example.com", password: "boss password" })
    for (
      const [method, path] of [
        ["POST", `/users/@me/projects/${context.project.id}/checkout`],
        ["POST", `/users/@me/projects/${context.project.id}/billing-portal`],
        ["GET", `/users/@me/projects/${context.project.id}/billing-invoices`]
      ] as const
    ) {
      const reply = await owner.call(method, path, method === "POST" ? {} : undefined)
      expect(reply.status, path).toBe(404)
      expect(reply.json.error.code).toBe("BILLING_DISABLED")
    }
    const webhook = await request(context.api.url, "POST", "/webhooks/incoming/stripe", { body: { type: "x" } })
    expect(webhook.status).toBe(404)
    expect(webhook.json.error.code).toBe("BILLING_DISABLED")
    expect((await request(context.api.url, "GET", "/config")).json.billing).toBe(false)
  })
})

describe("campaign test sends", () => {
  it("count against the campaigns cap; over it they are refused 403 and nothing is queued", async () => {
    const { browser: owner } = await signUp(context.api.url, "tester@example.com")
    const project = await ownedProject(owner, "Test sends", { campaigns: 2 })
    const created = await request(context.api.url, "POST", "/campaigns", {
      key: project.key,
      body: { name: "Launch", subject: "Hello", body: "<p>Hi</p>", from: project.from, audienceType: "ALL" }
    })
    expect(created.status).toBe(201)
    const test = (email: string) =>
      request(context.api.url, "POST", `/campaigns/${created.json.data.id}/test`, { key: project.key, body: { email } })
    const addresses = ["one@anywhere.example", "two@anywhere.example", "three@anywhere.example"]
    expect((await test(addresses[0]!)).status).toBe(200)
    expect((await test(addresses[1]!)).status).toBe(200)
    const over = await test(addresses[2]!)
    expect(over.status).toBe(403)
    expect(over.json.error).toMatchObject({ code: "BILLING_LIMIT_EXCEEDED", details: { category: "campaigns", limit: 2, used: 2 } })
    const queued = await context.stack.query<{ to_email: string }>("SELECT to_email FROM emails WHERE project_id = $1 ORDER BY to_email", [
      project.id
    ])
    expect(queued.map((row) => row.to_email)).toEqual([addresses[0], addresses[1]].sort())
    // The two went out, and count as the month's campaign mail.
    await eventually(async () => expect(delivered(addresses)).toEqual(addresses.slice(0, 2)))
    await eventually(async () =>
      expect(await usage(owner, project.id)).toEqual({ transactional: 0, campaigns: 2, workflows: 0, inbound: 0 })
    )
    expect(delivered(addresses)).toEqual(addresses.slice(0, 2))
  })

  it(`go out at most ${TEST_SENDS_PER_HOUR} an hour per project, with Retry-After, whatever the cap`, async () => {
    const { browser: owner } = await signUp(context.api.url, "hourly@example.com")
    const project = await ownedProject(owner, "Hourly tests", {})
    const created = await request(context.api.url, "POST", "/campaigns", {
      key: project.key,
      body: { name: "Launch", subject: "Hello", body: "<p>Hi</p>", from: project.from, audienceType: "ALL" }
    })
    const test = (email: string) =>
      request(context.api.url, "POST", `/campaigns/${created.json.data.id}/test`, { key: project.key, body: { email } })
    for (let i = 0; i < TEST_SENDS_PER_HOUR; i++) expect((await test(`hourly-${i}@anywhere.example`)).status).toBe(200)
    const refused = await test("one-too-many@anywhere.example")
    expect(refused.status).toBe(429)
    expect(refused.json.error).toMatchObject({ code: "RATE_LIMIT_EXCEEDED", details: { limit: TEST_SENDS_PER_HOUR } })
    const retryAfter = Number(refused.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThan(3_500)
    expect(retryAfter).toBeLessThanOrEqual(3_600)
    expect((await context.stack.query("SELECT 1 FROM emails WHERE to_email = 'one-too-many@anywhere.example'")).length).toBe(0)
    // Other mail of the project is not held by it.
    const sent = await request(context.api.url, "POST", "/v1/send", {
      key: project.key,
      body: { from: project.from, subject: "Hi", body: "<p>Hello</p>", to: ["customer@anywhere.example"] }
    })
    expect(sent.status).toBe(200)
  })
})

describe("project reset", () => {
  it("keeps the month's usage: send to the cap, reset, send again, refused", async () => {
    const { browser: owner } = await signUp(context.api.url, "resetter@example.com")
    const project = await ownedProject(owner, "Reset caps", { transactional: 2 })
    const send = (to: string) =>
      request(context.api.url, "POST", "/v1/send", {
        key: project.key,
        body: { from: project.from, subject: "Hi", body: "<p>Hello</p>", to: [to] }
      })
    for (const to of ["first@reset.example", "second@reset.example"]) {
      const sent = await send(to)
      expect(sent.status).toBe(200)
      await emailStatus(
        { api: context.api, project: { ...context.project, secretKey: project.key } },
        sent.json.data.emails[0].email,
        "SENT"
      )
    }
    expect((await send("third@reset.example")).status).toBe(403)

    const reset = await owner.post(`/users/@me/projects/${project.id}/reset`)
    expect(reset.status).toBe(200)
    expect((await context.stack.query("SELECT 1 FROM emails WHERE project_id = $1", [project.id])).length).toBe(0)
    const after = await send("third@reset.example")
    expect(after.status).toBe(403)
    expect(after.json.error).toMatchObject({ code: "BILLING_LIMIT_EXCEEDED", details: { category: "transactional", limit: 2, used: 2 } })
    expect(await usage(owner, project.id)).toEqual({ transactional: 2, campaigns: 0, workflows: 0, inbound: 0 })

    // A raised cap makes room for exactly what it adds.
    await owner.call("PUT", `/users/@me/projects/${project.id}/billing-limits`, { ...noLimits, transactional: 3 })
    expect((await send("third@reset.example")).status).toBe(200)
    expect((await send("fourth@reset.example")).status).toBe(403)
  })
})
