/**
 * Behaviours of the reference platform that its own test suite pins (apps/api/src/**\/__tests__ in
 * useplunk/plunk, read for the cases, not copied) and that show through the public API: its guards
 * (what it refuses), templates and workflow conditions as projects migrated from it write them, and
 * smaller differences. Black-box over HTTP against a real api + worker, Postgres, NATS and an SMTP
 * sink; each test names the reference test it mirrors. Differences kept on purpose are listed in
 * docs/api-notes.md ("Compatibility with the reference platform").
 */
import { describe, expect, it } from "vitest"
import { type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request, type TestProject } from "../support/stack.ts"
import { buildWorkflow, type Client, settled } from "../workflows/support.ts"

let context: MailContext
let client: Client
withMailStack((ready) => {
  context = ready
  client = { url: ready.api.url, key: ready.project.secretKey }
})

const secret = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })
const track = async (email: string, event: string, data?: Record<string, unknown>, key = context.project.publicKey) => {
  const response = await request(context.api.url, "POST", "/v1/track", { key, body: { email, event, data } })
  expect(response.status, response.text).toBe(200)
  return response.json.data as { contact: string; event: string }
}
const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))
const oneMailTo = (address: string) =>
  eventually(async () => {
    const mails = mailsTo(address)
    expect(mails).toHaveLength(1)
    return mails[0]!
  })

const template = async (overrides: Record<string, unknown> = {}) => {
  const created = await secret("POST", "/templates", {
    name: `Template ${Math.random()}`,
    subject: "Hello",
    body: "<p>Hello {{ email }}</p>",
    from: "hello@acme.test",
    ...overrides
  })
  expect(created.status, created.text).toBe(201)
  return created.json as { id: string; name: string }
}

const byTag = (tag: string) => ({ logic: "AND", groups: [{ filters: [{ field: "data.tag", operator: "equals", value: tag }] }] })
const campaign = async (overrides: Record<string, unknown> = {}) => {
  const created = await secret("POST", "/campaigns", {
    name: "Launch",
    subject: "News",
    body: "<p>News for {{ email }}</p>",
    from: "news@acme.test",
    audienceType: "ALL",
    ...overrides
  })
  expect(created.status, created.text).toBe(201)
  return created.json.data as { id: string; name: string }
}
const campaignStatus = (id: string, status: string, timeoutMs = 15_000) =>
  eventually(async () => {
    const res = await secret("GET", `/campaigns/${id}`)
    expect(res.json.status).toBe(status)
    return res.json
  }, timeoutMs)

/** The error envelope without what differs between two requests (request id, time). */
const errorBody = (response: { json: any }) => ({
  ...response.json,
  timestamp: undefined,
  error: { ...response.json.error, requestId: undefined }
})

describe("guards the reference has", () => {
  // Mirrors TemplateService.test.ts "should BLOCK deleting template used in workflow steps" and
  // "should ALLOW deleting template that was used but no longer in workflows".
  it("refuses to delete a template a workflow step sends (409 naming the workflows), and deletes it once unused", async () => {
    const used = await template()
    const { workflowId, ids } = await buildWorkflow(client, {
      name: "Welcome series",
      eventName: "joined",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId: used.id } } }
    })
    const refused = await secret("DELETE", `/templates/${used.id}`)
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatchObject({
      code: "TEMPLATE_IN_USE",
      statusCode: 409,
      message: expect.stringContaining("Welcome series"),
      details: { workflows: [{ id: workflowId, name: "Welcome series", stepId: ids.send }] }
    })
    expect((await secret("GET", `/templates/${used.id}`)).status).toBe(200)
    // The workflow no longer sends it: the template can go.
    expect((await secret("DELETE", `/workflows/${workflowId}/steps/${ids.send}`)).status).toBe(200)
    expect((await secret("DELETE", `/templates/${used.id}`)).json).toEqual({ success: true })
    expect((await secret("GET", `/templates/${used.id}`)).status).toBe(404)
  })

  // Mirrors CampaignService.test.ts "should throw error when campaign has no recipients".
  it("refuses to send or schedule a campaign nobody would receive (400 EMPTY_AUDIENCE); it stays a DRAFT", async () => {
    const nobody = await campaign({ audienceType: "FILTERED", audienceCondition: byTag("nobody-at-all") })
    const now = await secret("POST", `/campaigns/${nobody.id}/send`, {})
    expect(now.status).toBe(400)
    expect(now.json.error).toMatchObject({ code: "EMPTY_AUDIENCE", statusCode: 400, message: expect.stringContaining("no recipients") })
    const later = await secret("POST", `/campaigns/${nobody.id}/send`, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() })
    expect(later.status).toBe(400)
    expect(later.json.error.code).toBe("EMPTY_AUDIENCE")
    expect((await secret("GET", `/campaigns/${nobody.id}`)).json).toMatchObject({ status: "DRAFT", scheduledFor: null })

    const segment = await secret("POST", "/segments", { name: "Empty static", type: "STATIC" })
    expect(segment.status, segment.text).toBe(201)
    const toSegment = await campaign({ audienceType: "SEGMENT", segmentId: segment.json.id })
    expect((await secret("POST", `/campaigns/${toSegment.id}/send`, {})).json.error.code).toBe("EMPTY_AUDIENCE")

    // Marketing mail goes to subscribed contacts only: an audience of unsubscribed contacts is empty for it,
    // not for a transactional campaign.
    await secret("POST", "/contacts", { email: "optout@guards.test", subscribed: false, data: { tag: "optout" } })
    const marketing = await campaign({ audienceType: "FILTERED", audienceCondition: byTag("optout") })
    expect((await secret("POST", `/campaigns/${marketing.id}/send`, {})).json.error.code).toBe("EMPTY_AUDIENCE")
    const transactional = await campaign({ audienceType: "FILTERED", audienceCondition: byTag("optout"), type: "TRANSACTIONAL" })
    expect((await secret("POST", `/campaigns/${transactional.id}/send`, {})).json.data.status).toBe("SENDING")
    await campaignStatus(transactional.id, "SENT")
    await oneMailTo("optout@guards.test")
  })

  // Mirrors WorkflowService.test.ts "should throw error when workflow is disabled" (startExecution).
  it("refuses to start an execution of a disabled workflow (400 WORKFLOW_DISABLED), and starts it once enabled", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Off for now",
      eventName: "never.tracked",
      enabled: false,
      first: "exit",
      steps: { exit: { type: "EXIT", config: { reason: "done" } } }
    })
    const contact = await secret("POST", "/contacts", { email: "manual@guards.test" })
    const refused = await secret("POST", `/workflows/${workflowId}/executions`, { contactId: contact.json.id })
    expect(refused.status).toBe(400)
    expect(refused.json.error).toMatchObject({ code: "WORKFLOW_DISABLED", statusCode: 400 })
    expect((await secret("GET", `/workflows/${workflowId}/executions`)).json.total).toBe(0)
    expect((await secret("PATCH", `/workflows/${workflowId}`, { enabled: true })).status).toBe(200)
    expect((await secret("POST", `/workflows/${workflowId}/executions`, { contactId: contact.json.id })).status).toBe(201)
    await settled(client, workflowId, "EXITED")
  })

  // Mirrors CampaignService.test.ts "should delete a draft campaign" and "should not delete a non-draft campaign".
  it("deletes DRAFT campaigns only: a SENT one is a 409 and stays", async () => {
    await secret("POST", "/contacts", { email: "reader@guards.test", subscribed: true, data: { tag: "reader" } })
    const sent = await campaign({ audienceType: "FILTERED", audienceCondition: byTag("reader") })
    expect((await secret("POST", `/campaigns/${sent.id}/send`, {})).status).toBe(200)
    await campaignStatus(sent.id, "SENT")
    const refused = await secret("DELETE", `/campaigns/${sent.id}`)
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatchObject({
      code: "INVALID_CAMPAIGN_STATE",
      message: "A SENT campaign cannot be deleted: only drafts can",
      details: { status: "SENT" }
    })
    expect((await secret("GET", `/campaigns/${sent.id}`)).json.status).toBe("SENT")
    const draft = await campaign()
    expect((await secret("DELETE", `/campaigns/${draft.id}`)).json).toEqual({ success: true })
    expect((await secret("GET", `/campaigns/${draft.id}`)).status).toBe(404)
  })

  // Mirrors CampaignService.cancel.test.ts "returns a scheduled campaign to an editable draft".
  it(
    "cancelling a SCHEDULED campaign returns it to an unscheduled DRAFT that never sends, and can be edited and scheduled again",
    async () => {
      await secret("POST", "/contacts", { email: "later@guards.test", subscribed: true, data: { tag: "later" } })
      const scheduled = await campaign({ name: "Soon", audienceType: "FILTERED", audienceCondition: byTag("later") })
      const due = new Date(Date.now() + 3_000).toISOString()
      expect((await secret("POST", `/campaigns/${scheduled.id}/send`, { scheduledFor: due })).json.data).toMatchObject({
        status: "SCHEDULED",
        scheduledFor: due
      })
      const cancelled = await secret("POST", `/campaigns/${scheduled.id}/cancel`)
      expect(cancelled.status).toBe(200)
      expect(cancelled.json.data).toMatchObject({ status: "DRAFT", scheduledFor: null })
      // Past the time it was due: nothing went out, and it is still a draft.
      await new Promise((resolve) => setTimeout(resolve, 5_000))
      expect(mailsTo("later@guards.test")).toHaveLength(0)
      expect((await secret("GET", `/campaigns/${scheduled.id}`)).json).toMatchObject({ status: "DRAFT", scheduledFor: null, sentAt: null })
      // Editable and schedulable again; this time it goes.
      const edited = await secret("PUT", `/campaigns/${scheduled.id}`, {
        name: "Soon, edited",
        subject: "Edited news",
        body: "<p>Edited</p>",
        from: "news@acme.test",
        audienceType: "FILTERED",
        audienceCondition: byTag("later")
      })
      expect(edited.status, edited.text).toBe(200)
      expect(
        (await secret("POST", `/campaigns/${scheduled.id}/send`, { scheduledFor: new Date(Date.now() + 1_000).toISOString() })).json.data
          .status
      )
        .toBe("SCHEDULED")
      await campaignStatus(scheduled.id, "SENT")
      expect((await oneMailTo("later@guards.test")).parsed.subject).toBe("Edited news")
      // A SENDING campaign still cancels for good (covered with the mid-send test in test/campaigns/campaigns.test.ts).
    },
    40_000
  )

  // Mirrors templateValidation.test.ts "rejects the file-system tags" and "rejects an unclosed tag with a 400
  // naming the field and position" (the field and line here, in our 422), and template.test.ts "refuses the
  // {% render %} tag, which reads from disk".
  it("refuses {% render %} and {% include %} wherever a template is saved, naming the field and the line", async () => {
    const withRender = await secret("POST", "/templates", {
      name: "r",
      subject: "s",
      body: "<p>hi</p>\n{% render 'footer' %}",
      from: "hello@acme.test"
    })
    expect(withRender.status).toBe(422)
    expect(withRender.json.error.errors).toEqual([
      { field: "body", code: "invalid_template", message: expect.stringMatching(/\{% render %\} tag is not available.*\(line 2\)/) }
    ])
    const withInclude = await secret("POST", "/templates", {
      name: "i",
      subject: "{% include 'x' %}",
      body: "<p>hi</p>",
      from: "hello@acme.test"
    })
    expect(withInclude.json.error.errors).toEqual([
      { field: "subject", code: "invalid_template", message: expect.stringMatching(/\{% include %\} tag is not available.*\(line 1\)/) }
    ])
    const unclosed = await secret("POST", "/templates", {
      name: "u",
      subject: "s",
      body: "<p>ok</p>\n\n{% if plan == 'pro' %}Pro",
      from: "hello@acme.test"
    })
    expect(unclosed.json.error.errors[0]).toMatchObject({ field: "body", message: expect.stringContaining("(line 3)") })
    const saved = await template()
    expect((await secret("PATCH", `/templates/${saved.id}`, { body: "{% include 'x' %}" })).status).toBe(422)
    const inCampaign = await secret("POST", "/campaigns", {
      name: "c",
      subject: "s",
      body: "<p>a</p>\n<p>b</p>\n{% render 'x' %}",
      from: "news@acme.test",
      audienceType: "ALL"
    })
    expect(inCampaign.status).toBe(422)
    expect(inCampaign.json.error.errors[0]).toMatchObject({ field: "body", message: expect.stringContaining("(line 3)") })
    const inSend = await secret("POST", "/v1/send", {
      to: "x@guards.test",
      from: "hello@acme.test",
      subject: "s",
      body: "{% include 'x' %}"
    })
    expect(inSend.status).toBe(422)
    expect(inSend.json.error.errors[0]).toMatchObject({ field: "body", code: "invalid_template" })
    const workflow = await secret("POST", "/workflows", { name: "Hooks", eventName: "hook" })
    const hook = await secret("POST", `/workflows/${workflow.json.id}/steps`, {
      type: "WEBHOOK",
      config: { url: "https://example.org/hook", body: "{\"a\": 1}\n{% render 'x' %}" }
    })
    expect(hook.status).toBe(422)
    expect(hook.json.error.errors[0]).toMatchObject({
      field: "config.body",
      code: "invalid_template",
      message: expect.stringContaining("(line 2)")
    })
  })
})

describe("templates and workflow conditions as migrated projects write them", () => {
  // Mirrors ContactService.test.ts "should include reserved plunk_id and plunk_email fields" (getMergedData).
  it("renders {{ plunk_id }} and {{ plunk_email }} as the contact's id and email", async () => {
    const sent = await secret("POST", "/v1/send", {
      to: "Legacy@Guards.test",
      from: "hello@acme.test",
      subject: "For {{ plunk_email }}",
      body: "<p>id={{ plunk_id }} email={{plunk_email}}</p>"
    })
    expect(sent.status, sent.text).toBe(200)
    const contactId = sent.json.data.emails[0].contact.id
    const mail = await oneMailTo("legacy@guards.test")
    expect(mail.parsed.subject).toBe("For legacy@guards.test")
    expect(String(mail.parsed.html)).toContain(`<p>id=${contactId} email=legacy@guards.test</p>`)
  })

  // Mirrors template.test.ts "renders an unquoted ?? fallback when the value is missing", "treats the ??
  // fallback as a literal, not a variable reference", "keeps a fallback containing spaces intact" and
  // templateValidation.test.ts "accepts legacy placeholder syntax".
  it("renders an unquoted ?? fallback as the bare words, never as a variable or blank", async () => {
    const saved = await template({
      subject: "Hi {{ firstName ?? there }}",
      body: "<p>{{ title ?? Dear customer }}, your plan: {{ plan ?? free }}</p>"
    })
    // A MARKETING template goes to subscribed contacts only (issue 34, item 1): this new one opts in.
    const sent = await secret("POST", "/v1/send", {
      to: "fallback@guards.test",
      subscribed: true,
      template: saved.id,
      data: { free: "NOT THIS" }
    })
    expect(sent.status, sent.text).toBe(200)
    const mail = await oneMailTo("fallback@guards.test")
    expect(mail.parsed.subject).toBe("Hi there")
    expect(String(mail.parsed.html)).toContain("<p>Dear customer, your plan: free</p>")
  })

  // Mirrors WorkflowConditions.operators.test.ts "should match boolean true values" (contact.subscribed) and
  // "contact.email (case-insensitive, consistent with SegmentService)", and WorkflowService.getAvailableFields
  // (contact.<field>, event.<key>).
  it("accepts the reference's CONDITION field names (contact.email, contact.subscribed, contact.data.<key>, event.<key>), runs them, and lists both names", async () => {
    const tree = {
      logic: "AND",
      groups: [{
        filters: [
          { field: "contact.email", operator: "contains", value: "@MIGRATED.TEST" },
          { field: "contact.subscribed", operator: "equals", value: true },
          { field: "contact.data.tier", operator: "equals", value: "gold" }
        ]
      }]
    }
    const { workflowId, ids } = await buildWorkflow(client, {
      name: "Migrated",
      eventName: "upgraded",
      first: "who",
      steps: {
        who: { type: "CONDITION", config: { condition: tree }, next: { yes: "plan", no: "other" } },
        plan: { type: "CONDITION", config: { field: "event.plan", operator: "equals", value: "pro" }, next: { yes: "pro", no: "other" } },
        pro: { type: "EXIT", config: { reason: "gold pro" } },
        other: { type: "EXIT", config: { reason: "other" } }
      }
    })
    // Stored under this service's names; an event operator keeps `contact.subscribed` as the event it names.
    const stored = (await secret("GET", `/workflows/${workflowId}`)).json.steps
    expect(
      stored.find((step: { id: string }) => step.id === ids.who).config.condition.groups[0].filters.map((f: { field: string }) => f.field)
    )
      .toEqual(["email", "subscribed", "data.tier"])
    expect(stored.find((step: { id: string }) => step.id === ids.plan).config).toMatchObject({ field: "context.plan" })
    const asEvent = await secret("POST", `/workflows/${workflowId}/steps`, {
      type: "CONDITION",
      config: { field: "contact.subscribed", operator: "triggered" }
    })
    expect(asEvent.status, asEvent.text).toBe(201)
    expect(asEvent.json.config.field).toBe("event.contact.subscribed")

    await secret("POST", "/contacts", { email: "ada@migrated.test", subscribed: true, data: { tier: "gold" } })
    await secret("POST", "/contacts", { email: "bob@migrated.test", subscribed: true, data: { tier: "silver" } })
    await track("ada@migrated.test", "upgraded", { plan: "pro" })
    await track("bob@migrated.test", "upgraded", { plan: "pro" })
    const executions = await settled(client, workflowId, "EXITED", 2)
    const reasons = await Promise.all(
      executions.map(async (execution) => [(await secret("GET", `/contacts/${execution.contactId}`)).json.email, execution.exitReason])
    )
    expect(Object.fromEntries(reasons)).toEqual({ "ada@migrated.test": "gold pro", "bob@migrated.test": "other" })

    const fields = (await secret("GET", "/workflows/fields")).json
    expect(fields.fields).toEqual(
      expect.arrayContaining([
        "email",
        "contact.email",
        "subscribed",
        "contact.subscribed",
        "data.tier",
        "contact.data.tier",
        "context.plan",
        "event.plan"
      ])
    )
    expect(fields.typedFields).toContainEqual({ field: "contact.data.tier", type: "string", category: "Custom Data" })
    expect(fields.typedFields).toContainEqual({ field: "event.plan", type: "string", category: "Event Data" })
    expect(fields.count).toBe(fields.typedFields.length)
    expect(fields.fields).toEqual([...fields.fields].sort())
  })

  // Mirrors WorkflowConditions.operators.test.ts "should branch NO when field does not exist (consistent with
  // SegmentService)" and SegmentService.test.ts "should support notContains and notEquals for JSON data fields".
  it("notContains on a field the contact does not have is false, in workflow CONDITION steps as in segments", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Not Acme",
      eventName: "checked",
      first: "check",
      steps: {
        check: {
          type: "CONDITION",
          config: { field: "data.company", operator: "notContains", value: "Acme" },
          next: { yes: "yes", no: "no" }
        },
        yes: { type: "EXIT", config: { reason: "yes" } },
        no: { type: "EXIT", config: { reason: "no" } }
      }
    })
    const people = { "none@nc.test": {}, "other@nc.test": { company: "Other Corp" }, "acme@nc.test": { company: "Acme Inc" } }
    for (const [email, data] of Object.entries(people)) await secret("POST", "/contacts", { email, data: { ...data, nc: true } })
    for (const email of Object.keys(people)) await track(email, "checked")
    const executions = await settled(client, workflowId, "EXITED", 3)
    const branches = await Promise.all(
      executions.map(async (execution) => [(await secret("GET", `/contacts/${execution.contactId}`)).json.email, execution.exitReason])
    )
    expect(Object.fromEntries(branches)).toEqual({ "none@nc.test": "no", "other@nc.test": "yes", "acme@nc.test": "no" })

    const segment = await secret("POST", "/segments", {
      name: "Not Acme",
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "data.nc", operator: "exists" }, { field: "data.company", operator: "notContains", value: "Acme" }] }]
      }
    })
    expect(segment.status, segment.text).toBe(201)
    const members = await secret("GET", `/segments/${segment.json.id}/contacts`)
    expect(members.json.data.map((contact: { email: string }) => contact.email)).toEqual(["other@nc.test"])
  })
})

describe("smaller differences", () => {
  // Mirrors WorkflowService.test.ts "should reject foreign and missing templates without revealing which exists"
  // and "should reject updating an email step to foreign and missing templates".
  it("a SEND_EMAIL step with another project's template or a missing one is the same 404", async () => {
    const other = await context.stack.createProject("other")
    await verifyDomain(context, other.secretKey, "other.test")
    const theirs = await request(context.api.url, "POST", "/templates", {
      key: other.secretKey,
      body: { name: "Theirs", subject: "s", body: "<p>b</p>", from: "x@other.test" }
    })
    expect(theirs.status, theirs.text).toBe(201)
    const workflow = await secret("POST", "/workflows", { name: "Sends", eventName: "sends" })
    const foreign = await secret("POST", `/workflows/${workflow.json.id}/steps`, {
      type: "SEND_EMAIL",
      config: { templateId: theirs.json.id }
    })
    const missing = await secret("POST", `/workflows/${workflow.json.id}/steps`, {
      type: "SEND_EMAIL",
      config: { templateId: "0190a3c2-0000-7000-8000-000000000000" }
    })
    expect(foreign.status).toBe(404)
    expect(foreign.json.error).toMatchObject({ code: "NOT_FOUND", message: "Template not found", statusCode: 404 })
    expect(errorBody(missing)).toEqual(errorBody(foreign))

    const mine = await template()
    const step = await secret("POST", `/workflows/${workflow.json.id}/steps`, { type: "SEND_EMAIL", config: { templateId: mine.id } })
    expect(step.status).toBe(201)
    const moved = await secret("PATCH", `/workflows/${workflow.json.id}/steps/${step.json.id}`, { config: { templateId: theirs.json.id } })
    expect(moved.status).toBe(404)
    expect(errorBody(moved)).toEqual(errorBody(foreign))
    const steps = (await secret("GET", `/workflows/${workflow.json.id}`)).json.steps
    expect(steps.find((candidate: { id: string }) => candidate.id === step.json.id).config.templateId).toBe(mine.id)
    expect(steps).toHaveLength(2)
  })

  // Mirrors ContactService.fields.test.ts "returns the standard columns even with no contacts".
  it("reports the standard fields fully covered in a project without contacts", async () => {
    const empty = await context.stack.createProject("empty")
    const fields = await request(context.api.url, "GET", "/contacts/fields", { key: empty.secretKey })
    expect(fields.json.fields).toEqual([
      { field: "email", type: "string", isCustom: false, coverage: 1 },
      { field: "subscribed", type: "boolean", isCustom: false, coverage: 1 },
      { field: "createdAt", type: "date", isCustom: false, coverage: 1 },
      { field: "updatedAt", type: "date", isCustom: false, coverage: 1 }
    ])
  })

  // Mirrors EventService.test.ts "should return unique event names ordered by frequency".
  it("lists event names most frequent first, ties by name", async () => {
    const project: TestProject = await context.stack.createProject("names")
    const counts = { "a.once": 1, "b.thrice": 3, "c.twice": 2, "a.twice": 2 }
    for (const [name, times] of Object.entries(counts)) {
      for (let i = 0; i < times; i++) await track(`names${i}@guards.test`, name, undefined, project.publicKey)
    }
    const names = await eventually(async () => {
      const res = await request(context.api.url, "GET", "/events/names", { key: project.secretKey })
      expect(res.json.names.reduce((sum: number, name: { count: number }) => sum + name.count, 0)).toBe(8)
      return res.json.names as Array<{ name: string; count: number }>
    })
    expect(names.map(({ name, count }) => [name, count])).toEqual([["b.thrice", 3], ["a.twice", 2], ["c.twice", 2], ["a.once", 1]])
  })

  // Mirrors CampaignService.test.ts "should duplicate a campaign with (Copy) suffix" (and TemplateService.duplicate's name).
  it("names duplicates with (Copy)", async () => {
    const original = await campaign({ name: "Spring sale" })
    const copy = await secret("POST", `/campaigns/${original.id}/duplicate`)
    expect(copy.json.data).toMatchObject({ name: "Spring sale (Copy)", status: "DRAFT" })
    const saved = await template({ name: "Receipt" })
    const templateCopy = await secret("POST", `/templates/${saved.id}/duplicate`)
    expect((await secret("GET", `/templates/${templateCopy.json.id}`)).json.name).toBe("Receipt (Copy)")
  })
})
