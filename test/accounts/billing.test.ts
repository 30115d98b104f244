/**
 * Billing limits and consumption on a real sending stack (api + worker + SMTP sink): the monthly
 * transactional cap refuses /v1/send with 403 BILLING_LIMIT_EXCEEDED, consumption counts the emails the
 * relay accepted, each once; every member sees the caps and the usage, an ADMIN sets the caps. Without
 * Stripe settings, billing is off.
 */
import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, withMailStack } from "../support/mail.ts"
import { request } from "../support/stack.ts"
import { Browser } from "./support.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

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
  await owner.post(`/projects/${context.project.id}/members`, { email: "staff@example.com" })
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
    const queued = await context.stack.query<{ n: number }>("SELECT count(*)::int AS n FROM emails WHERE project_id = $1", [context.project.id])
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
    for (const [method, path] of [
      ["POST", `/users/@me/projects/${context.project.id}/checkout`],
      ["POST", `/users/@me/projects/${context.project.id}/billing-portal`],
      ["GET", `/users/@me/projects/${context.project.id}/billing-invoices`]
    ] as const) {
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
