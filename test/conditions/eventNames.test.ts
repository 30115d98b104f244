/**
 * Event filters written as the reference documents them (the bare event name with an event operator)
 * are accepted wherever conditions are: segments, campaign audiences and workflow CONDITION steps. Each
 * stores `event.<name>` and shows it back, so the two spellings are one filter.
 */
import { describe, expect, it } from "vitest"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })
const track = (email: string, event: string) =>
  request(context.api.url, "POST", "/v1/track", { key: context.project.publicKey, body: { email, event } })

const tree = (field: string, operator = "triggeredWithin") => ({
  logic: "AND",
  groups: [{ filters: [{ field, operator, ...(operator === "triggeredWithin" ? { value: 30, unit: "days" } : {}) }] }]
})

describe("bare event names in conditions", () => {
  it("segments: the reference's eventBased example is accepted, stored as event.<name>, and matches those who tracked it", async () => {
    // The reference's POST /segments example `eventBased`, as written there.
    const created = await secret("POST", "/segments", {
      name: "Recent purchasers",
      condition: { logic: "AND", groups: [{ filters: [{ field: "purchase", operator: "triggeredWithin", value: 30, unit: "days" }] }] }
    })
    expect(created.status, created.text).toBe(201)
    expect(created.json.condition).toEqual(tree("event.purchase"))
    expect((await secret("GET", `/segments/${created.json.id}`)).json.condition).toEqual(tree("event.purchase"))
    expect((await secret("GET", "/segments")).json.find((s: { id: string }) => s.id === created.json.id).condition).toEqual(
      tree("event.purchase")
    )

    expect((await track("buyer@example.com", "purchase")).status).toBe(200)
    expect((await track("browser@example.com", "page_view")).status).toBe(200)
    await eventually(async () => {
      const members = await secret("GET", `/segments/${created.json.id}/contacts`)
      expect(members.json.data.map((contact: { email: string }) => contact.email)).toEqual(["buyer@example.com"])
    })
    // The same filter either way: usage finds it under the event's name.
    expect((await secret("GET", "/events/purchase/usage")).json.segments).toContainEqual({ id: created.json.id, name: "Recent purchasers" })

    const patched = await secret("PATCH", `/segments/${created.json.id}`, { condition: tree("refund", "notTriggered") })
    expect(patched.status).toBe(200)
    expect(patched.json.condition).toEqual(tree("event.refund", "notTriggered"))
    // A bare name under a value operator is still not a field.
    const wrong = await secret("POST", "/segments", { name: "Wrong", condition: tree("purchase", "equals") })
    expect(wrong.status).toBe(422)
    expect(wrong.json.error.errors[0].field).toBe("condition.groups[0].filters[0].field")
  })

  it("campaign audiences: FILTERED with a bare event name is stored and shown as event.<name>", async () => {
    const body = { name: "Win back", subject: "Hi", body: "<p>Hi</p>", from: "news@acme.test", audienceType: "FILTERED" }
    const created = await secret("POST", "/campaigns", { ...body, audienceCondition: tree("purchase") })
    expect(created.status, created.text).toBe(201)
    expect(created.json.data.audienceCondition).toEqual(tree("event.purchase"))
    expect((await secret("GET", `/campaigns/${created.json.data.id}`)).json.audienceCondition).toEqual(tree("event.purchase"))
    const replaced = await secret("PUT", `/campaigns/${created.json.data.id}`, { ...body, audienceCondition: tree("signup", "triggered") })
    expect(replaced.json.audienceCondition).toEqual(tree("event.signup", "triggered"))
  })

  it("workflow CONDITION steps: a tree or a single filter with a bare event name is stored as event.<name>", async () => {
    const workflow = await secret("POST", "/workflows", { name: "Upsell", eventName: "signup" })
    expect(workflow.status).toBe(201)
    const single = await secret("POST", `/workflows/${workflow.json.id}/steps`, {
      type: "CONDITION",
      config: { field: "purchase", operator: "triggeredWithin", value: 1, unit: "days" }
    })
    expect(single.status, single.text).toBe(201)
    expect(single.json.config).toEqual({ field: "event.purchase", operator: "triggeredWithin", value: 1, unit: "days" })
    const nested = await secret("POST", `/workflows/${workflow.json.id}/steps`, {
      type: "CONDITION",
      config: { condition: tree("purchase", "triggered") }
    })
    expect(nested.status, nested.text).toBe(201)
    expect(nested.json.config.condition).toEqual(tree("event.purchase", "triggered"))
    const updated = await secret("PATCH", `/workflows/${workflow.json.id}/steps/${nested.json.id}`, {
      config: { condition: tree("refund", "triggered") }
    })
    expect(updated.json.config.condition).toEqual(tree("event.refund", "triggered"))
    const stored = (await secret("GET", `/workflows/${workflow.json.id}`)).json.steps.filter((step: { type: string }) =>
      step.type === "CONDITION"
    )
    expect(stored.map((step: { config: unknown }) => step.config)).toEqual([single.json.config, updated.json.config])
  })
})
