/**
 * Rendered mail size, capped at render time wherever mail is made: /v1/send answers 422 (subject) or
 * 413 (body, whole message, the request's total) and stores nothing; a campaign recipient over a cap
 * is failed with the reason while the campaign goes on; a workflow SEND_EMAIL step over a cap fails
 * its execution with the reason. Real api + worker, Postgres, NATS, SMTP sink, DNS server.
 */
import { describe, expect, it } from "vitest"
import { capExceeded, MAX_HTML_BYTES, MAX_MESSAGE_BYTES } from "../../src/mail/prepare.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"
import { buildWorkflow, call, type Client, executionsOf } from "../workflows/support.ts"

let context: MailContext
let client: Client
withMailStack((ready) => {
  context = ready
  client = { url: ready.api.url, key: ready.project.secretKey }
})

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })
const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))
const emailsTo = async (address: string) =>
  Number((await context.stack.query<{ n: string }>("SELECT count(*) AS n FROM emails WHERE to_email = $1", [address]))[0]!.n)

/** A body that renders `times` copies of `data.blob`. */
const LOOP = "<p>{% for i in (1..{{times}}) %}{{ blob }}{% endfor %}</p>"
const loopBody = (times: number) => LOOP.replace("{{times}}", String(times))

describe("/v1/send caps the rendered mail", () => {
  it("a subject rendering past 998 characters is 422 on `subject`, naming the limit; nothing is stored or sent", async () => {
    const base = { from: "hello@acme.test", body: "<p>hi</p>" }
    for (
      const [to, subject, data] of [
        ["loop@caps.test", "{% for i in (1..100) %}{{ word }}{% endfor %}", { word: "x".repeat(500) }],
        ["exact@caps.test", "{{ word }}", { word: "y".repeat(999) }]
      ] as const
    ) {
      const res = await secret("POST", "/v1/send", { ...base, to, subject, data })
      expect(res.status, JSON.stringify(res.json)).toBe(422)
      expect(res.json.error.code).toBe("VALIDATION_ERROR")
      expect(res.json.error.errors[0]).toMatchObject({ field: "subject", code: "too_big", message: expect.stringContaining("998") })
      expect(await emailsTo(to)).toBe(0)
    }
    // 998 characters after rendering pass; line breaks from the data become spaces.
    const ok = await secret("POST", "/v1/send", {
      ...base,
      to: "fits@caps.test",
      subject: "{{ word }}",
      data: { word: `${"z".repeat(500)}\r\n${"z".repeat(496)}` }
    })
    expect(ok.status, JSON.stringify(ok.json)).toBe(200)
    const [mail] = await eventually(async () => {
      const mails = mailsTo("fits@caps.test")
      expect(mails).toHaveLength(1)
      return mails
    })
    expect(mail!.parsed.subject).toBe(`${"z".repeat(500)} ${"z".repeat(496)}`)
  })

  it("a body rendering past 5 MB is 413 naming the limit, and nothing is stored", async () => {
    const res = await secret("POST", "/v1/send", {
      to: "huge@caps.test",
      from: "hello@acme.test",
      subject: "Big",
      body: loopBody(100),
      data: { blob: { value: "b".repeat(100_000), persistent: false } }
    })
    expect(res.status, JSON.stringify(res.json)).toBe(413)
    expect(res.json.error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", statusCode: 413, details: { limit: MAX_HTML_BYTES, part: "body" } })
    expect(res.json.error.message).toContain(String(MAX_HTML_BYTES))
    expect(await emailsTo("huge@caps.test")).toBe(0)
  })

  it("what one request stores (recipients × rendered size) is bounded: 413 at 50 MB, nothing stored", async () => {
    const to = Array.from({ length: 12 }, (_, i) => `many${i}@caps.test`)
    const res = await secret("POST", "/v1/send", {
      to,
      from: "hello@acme.test",
      subject: "Many",
      body: loopBody(45),
      data: { blob: { value: "m".repeat(100_000), persistent: false } }
    })
    expect(res.status, JSON.stringify(res.json)).toBe(413)
    expect(res.json.error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", details: { limit: 50 * 1024 * 1024, part: "request" } })
    for (const address of to) expect(await emailsTo(address)).toBe(0)
    const contacts = await context.stack.query("SELECT 1 FROM contacts WHERE email LIKE 'many%@caps.test'")
    expect(contacts).toEqual([])
  })

  it("the whole message counts subject, body, headers and attachments (40 MB)", () => {
    const attachment = { filename: "a.bin", content: "A".repeat(13_000_000) }
    const email = { to: "x@caps.test", subject: "s", html: "<p>x</p>", headers: {} }
    expect(capExceeded({ ...email, attachments: [attachment, attachment] })).toBeUndefined()
    expect(capExceeded({ ...email, attachments: [attachment, attachment, attachment, attachment] })).toMatchObject({
      part: "message",
      limit: MAX_MESSAGE_BYTES
    })
    expect(capExceeded({ ...email, subject: "a\nb", attachments: [] })).toMatchObject({ part: "subject" })
  })
})

describe("campaigns cap each recipient's mail", () => {
  it("a recipient over a cap is failed with the reason and counted; the others get theirs and the campaign is SENT", async () => {
    const contact = async (email: string, data: Record<string, unknown>) =>
      expect((await secret("POST", "/contacts", { email, subscribed: true, data: { group: "caps", ...data } })).status).toBe(201)
    await contact("small@caps.test", { blob: "s", title: "Short" })
    await contact("bulky@caps.test", { blob: "B".repeat(100_000), title: "Short" })
    await contact("wordy@caps.test", { blob: "s", title: "T".repeat(1_200) })
    const created = await secret("POST", "/campaigns", {
      name: "Caps",
      subject: "{{ title }}",
      body: loopBody(100),
      from: "news@acme.test",
      audienceType: "FILTERED",
      audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.group", operator: "equals", value: "caps" }] }] }
    })
    expect(created.status, JSON.stringify(created.json)).toBe(201)
    const id = created.json.data.id
    expect((await secret("POST", `/campaigns/${id}/send`, {})).status).toBe(200)
    const stats = await eventually(async () => {
      const res = (await secret("GET", `/campaigns/${id}/stats`)).json
      expect(res.status).toBe("SENT")
      return res
    }, 15_000)
    expect(stats).toMatchObject({ sent: 1, failed: 2, pending: 0, error: null })
    expect(mailsTo("small@caps.test")).toHaveLength(1)
    expect(mailsTo("bulky@caps.test")).toHaveLength(0)
    expect(mailsTo("wordy@caps.test")).toHaveLength(0)
    const failed = await context.stack.query<{ email: string; skipped: string; error: string }>(
      `SELECT c.email, r.skipped, r.error FROM campaign_recipients r JOIN contacts c ON c.id = r.contact_id
       WHERE r.campaign_id = $1 AND r.skipped IS NOT NULL ORDER BY c.email`,
      [id]
    )
    expect(failed).toEqual([
      { email: "bulky@caps.test", skipped: "failed", error: expect.stringContaining(`${MAX_HTML_BYTES} bytes`) },
      { email: "wordy@caps.test", skipped: "failed", error: expect.stringContaining("998 characters") }
    ])
  })
})

describe("workflow SEND_EMAIL caps the mail", () => {
  it("a step whose mail breaks a cap fails, and its execution FAILS with the reason; others complete", async () => {
    const template = await secret("POST", "/templates", {
      name: "Caps",
      subject: "About {{ event.title }}",
      body: "<p>{{ email }}</p>",
      from: "hello@acme.test",
      type: "TRANSACTIONAL"
    })
    expect(template.status, JSON.stringify(template.json)).toBe(201)
    const { workflowId } = await buildWorkflow(client, {
      name: "Caps",
      eventName: "caps_event",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId: template.json.id } } }
    })
    const track = (email: string, title: string) =>
      request(context.api.url, "POST", "/v1/track", {
        key: context.project.publicKey,
        body: { email, event: "caps_event", data: { title } }
      })
    expect((await track("wf-long@caps.test", "L".repeat(2_000))).status).toBe(200)
    expect((await track("wf-short@caps.test", "short")).status).toBe(200)
    const executions = await eventually(async () => {
      const list = await executionsOf(client, workflowId)
      expect(list.map((execution) => execution.status).sort()).toEqual(["COMPLETED", "FAILED"])
      return list
    }, 15_000)
    const failed = executions.find((execution) => execution.status === "FAILED")!
    expect(failed.error).toMatch(/^SEND_EMAIL step failed: The subject for wf-long@caps\.test renders to .*998 characters/)
    const detail = (await call(client, "GET", `/workflows/${workflowId}/executions/${failed.id}`)).json
    expect(detail.steps.find((step: { stepType: string }) => step.stepType === "SEND_EMAIL")).toMatchObject({
      status: "FAILED",
      error: expect.stringContaining("998")
    })
    await eventually(async () => expect(mailsTo("wf-short@caps.test")).toHaveLength(1))
    expect(mailsTo("wf-long@caps.test")).toHaveLength(0)
    expect(await emailsTo("wf-long@caps.test")).toBe(0)
  })
})
