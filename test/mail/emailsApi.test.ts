/**
 * Local delivery (no SMTP_URL) and the Emails API, over HTTP on one stack that sends nothing: templates,
 * campaigns and /v1/send work with a sender domain nobody verified; the mail lands in the file outbox
 * and is listed (newest first, filtered, cursor-paged), shown (HTML, text, headers, timeline) and
 * downloaded by GET /emails; another project's ids answer 404. A second stack, with a relay, brings
 * the verified-domain rule back.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMailStack, emailStatus, type MailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject
let other: TestProject
const outbox = mkdtempSync(join(tmpdir(), "ms-emails-outbox-"))

const secret = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })

/** Every email of a listing, page after page of `limit`. */
const everyPage = async (query: string, limit: number) => {
  const seen: Array<any> = []
  let cursor: string | null = null
  for (let pages = 0; pages < 50; pages++) {
    const page = await secret("GET", `/emails?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`)
    expect(page.status, page.text).toBe(200)
    expect(page.json.data.length).toBeLessThanOrEqual(limit)
    seen.push(...page.json.data)
    if (!page.json.hasMore) return seen
    cursor = page.json.cursor
  }
  throw new Error("the listing did not end")
}

const ids: Record<string, string> = {}
let templateId: string
let campaignId: string

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", SEND_RATE_PER_SECOND: "0", SMTP_URL: "", OUTBOX_DIR: outbox })
  api = await stack.start("all")
  project = await stack.createProject("Local")
  other = await stack.createProject("Other")

  const template = await secret("POST", "/templates", {
    name: "Welcome",
    subject: "Welcome {{ name }}",
    from: "hello@never-verified.test",
    type: "TRANSACTIONAL",
    body: '<html><body><h1>Hi {{ name }}</h1><p>Read <a href="https://example.com/guide?a=1&b=2">the guide</a>.</p></body></html>'
  })
  expect(template.status, template.text).toBe(201)
  templateId = template.json.id
  for (const name of ["ann", "bob", "cid"]) {
    const sent = await secret("POST", "/v1/send", { to: `${name}@example.org`, template: templateId, data: { name } })
    expect(sent.status, sent.text).toBe(200)
    ids[name] = sent.json.data.emails[0].email
  }
  const plain = await secret("POST", "/v1/send", {
    to: "dee@example.org",
    from: "ops@never-verified.test",
    subject: "Plain",
    body: "<p>Just text</p>"
  })
  expect(plain.status, plain.text).toBe(200)
  ids.dee = plain.json.data.emails[0].email

  const campaign = await secret("POST", "/campaigns", {
    name: "Launch",
    subject: "Launch day",
    body: "<p>We launched</p>",
    from: "news@never-verified.test",
    audienceType: "ALL"
  })
  expect(campaign.status, campaign.text).toBe(201)
  campaignId = campaign.json.data.id
  // The only subscribed contact: /v1/send makes its recipients unsubscribed contacts.
  expect((await secret("POST", "/contacts", { email: "eve@example.org", subscribed: true })).status).toBe(201)
  const launched = await secret("POST", `/campaigns/${campaignId}/send`, {})
  expect(launched.status, launched.text).toBeLessThan(300)
  await eventually(async () => {
    const listed = await secret("GET", `/emails?campaignId=${campaignId}&status=SENT`)
    expect(listed.json.data).toHaveLength(1)
  })

  for (const id of [ids.ann!, ids.bob!, ids.cid!, ids.dee!]) await emailStatus({ api, project }, id, "SENT")
})

afterAll(async () => {
  await stack?.stop()
})

describe("local delivery (no SMTP_URL)", () => {
  it("says so in GET /config", async () => {
    const config = await request(api.url, "GET", "/config")
    expect(config.json.delivery).toEqual({ mode: "local", verifiedDomainRequired: false })
  })

  it("writes the mail of an unverified domain, unsigned, to the file outbox", () => {
    const file = readdirSync(outbox).find((name) => name.startsWith(ids.ann!))
    expect(file, readdirSync(outbox).join(", ")).toBeDefined()
    const message = readFileSync(join(outbox, file!), "utf8")
    expect(message).toContain("From: hello@never-verified.test")
    expect(message).toContain("Subject: Welcome ann")
    expect(message).not.toContain("DKIM-Signature")
  })
})

describe("GET /emails", () => {
  it("lists every email of the project, newest first, in cursor pages", async () => {
    const all = await everyPage("", 2)
    const listed = all.map((email) => email.id)
    for (const id of Object.values(ids)) expect(listed).toContain(id)
    expect(new Set(listed).size).toBe(listed.length)
    const times = all.map((email) => email.createdAt)
    expect([...times].sort().reverse()).toEqual(times)
    expect(all.find((email) => email.id === ids.ann)).toMatchObject({
      to: "ann@example.org",
      from: "hello@never-verified.test",
      subject: "Welcome ann",
      templateId,
      status: "SENT"
    })
    expect(all.find((email) => email.id === ids.ann)).not.toHaveProperty("projectId")
  })

  it("filters by status, recipient, template, campaign and time", async () => {
    const listed = async (query: string) => (await everyPage(query, 100)).map((email) => email.id).sort()
    expect(await listed(`&templateId=${templateId}`)).toEqual([ids.ann, ids.bob, ids.cid].sort())
    expect(await listed("&recipient=BOB@")).toEqual([ids.bob])
    expect(await listed("&status=SENT&recipient=dee")).toEqual([ids.dee])
    expect(await listed("&status=failed,suppressed")).toEqual([])
    const launch = await everyPage(`&campaignId=${campaignId}`, 100)
    expect(launch.map((email) => email.to)).toEqual(["eve@example.org"])
    const ann = (await secret("GET", `/emails/${ids.ann}`)).json
    expect(await listed(`&until=${encodeURIComponent(ann.createdAt)}`)).toEqual([])
    expect(await listed(`&since=${encodeURIComponent(ann.createdAt)}&templateId=${templateId}`)).toEqual([ids.ann, ids.bob, ids.cid].sort())
  })

  it("answers bad filters with 422 naming each field, and a forged cursor with 400", async () => {
    const bad = await secret("GET", "/emails?status=SENT,LOST&templateId=nope&since=yesterday")
    expect(bad.status).toBe(422)
    expect(bad.json.error.errors.map((error: { field: string }) => error.field).sort()).toEqual(["since", "status", "templateId"])
    const forged = await secret("GET", `/emails?cursor=${Buffer.from(JSON.stringify(["x", "y"])).toString("base64url")}`)
    expect(forged.status).toBe(400)
    expect(forged.json.error.code).toBe("INVALID_CURSOR")
  })

  it("is project-scoped", async () => {
    const foreign = await secret("GET", "/emails?limit=100", undefined, other.secretKey)
    expect(foreign.status).toBe(200)
    expect(foreign.json.data).toEqual([])
  })
})

describe("GET /emails/:id and /emails/:id/raw", () => {
  it("shows the email as sent: HTML, a preview that counts nothing, text, headers and timeline", async () => {
    const detail = await secret("GET", `/emails/${ids.ann}`)
    expect(detail.status, detail.text).toBe(200)
    const email = detail.json
    expect(email).toMatchObject({ id: ids.ann, to: "ann@example.org", subject: "Welcome ann", status: "SENT", toName: null })
    // As sent: tracked (the project tracks by default).
    expect(email.html).toContain("<h1>Hi ann</h1>")
    expect(email.html).toContain(`/t/o/${ids.ann}/`)
    expect(email.html).toContain(`/t/c/${ids.ann}/`)
    // The preview: no pixel, the link where it leads.
    expect(email.previewHtml).not.toContain("/t/o/")
    expect(email.previewHtml).not.toContain("/t/c/")
    expect(email.previewHtml).toContain('href="https://example.com/guide?a=1&amp;b=2"')
    expect(email.text).toContain("Hi ann")
    const header = (name: string) => email.headers.find((line: { name: string }) => line.name.toLowerCase() === name.toLowerCase())?.value
    expect(header("Subject")).toBe("Welcome ann")
    expect(header("To")).toBe("ann@example.org")
    expect(header("Message-ID")).toBe(`<${email.messageId}>`)
    expect(email.attachments).toEqual([])
    expect(email.timeline.map((entry: { step: string }) => entry.step)).toEqual(["QUEUED", "SENT"])
    expect(email.timeline[1].at).toBe(email.sentAt)
  })

  it("downloads the raw message as message/rfc822", async () => {
    const response = await fetch(`${api.url}/emails/${ids.dee}/raw`, { headers: { authorization: `Bearer ${project.secretKey}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^message\/rfc822/)
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="${ids.dee}.eml"`)
    const raw = await response.text()
    expect(raw).toMatch(/^Subject: Plain\r$/m)
    expect(raw).toContain("Just text")
  })

  it("reads back a row stored before the size caps without reading its oversized parts", async () => {
    // Over the HTML cap, and an attachment past what the Postgres client reads in one message.
    const [row] = await stack.query<{ id: string }>(
      `INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, attachments, type, priority, message_id, status)
       VALUES (gen_random_uuid(), $1, 0, 'legacy@example.org', 'hello@never-verified.test', 'Legacy', repeat('x', 6 * 1024 * 1024),
               jsonb_build_array(jsonb_build_object('filename', 'big.bin', 'content', repeat('A', 17 * 1024 * 1024))),
               'TRANSACTIONAL', 0, gen_random_uuid() || '@never-verified.test', 'FAILED')
       RETURNING id`,
      [project.id]
    )
    const detail = await secret("GET", `/emails/${row!.id}`)
    expect(detail.status, detail.text.slice(0, 300)).toBe(200)
    expect(detail.json).toMatchObject({ html: null, previewHtml: null, text: null, status: "FAILED" })
    expect(detail.json.attachments).toEqual([{
      filename: "big.bin",
      contentType: null,
      contentId: null,
      disposition: "attachment",
      size: 17 * 1024 * 1024 * 3 / 4
    }])
    const raw = await secret("GET", `/emails/${row!.id}/raw`)
    expect(raw.status).toBe(404)
    expect(raw.json.error.message).toContain("size caps")
  })

  it("downloads a message with its attachment", async () => {
    const sent = await secret("POST", "/v1/send", {
      to: "fay@example.org",
      from: "ops@never-verified.test",
      subject: "Report",
      body: "<p>Attached</p>",
      attachments: [{ filename: "report.txt", content: Buffer.from("the report").toString("base64"), contentType: "text/plain" }]
    })
    const id = sent.json.data.emails[0].email
    await emailStatus({ api, project }, id, "SENT")
    const detail = (await secret("GET", `/emails/${id}`)).json
    expect(detail.attachments).toEqual([{
      filename: "report.txt",
      contentType: "text/plain",
      contentId: null,
      disposition: "attachment",
      size: 10
    }])
    expect(detail.headers.find((line: { name: string }) => line.name === "Content-Type").value).toMatch(/^multipart\/mixed/)
    const raw = await secret("GET", `/emails/${id}/raw`)
    expect(raw.text).toContain("filename=report.txt")
    expect(raw.text).toContain(Buffer.from("the report").toString("base64"))
  })

  it("answers 404 for another project's email and for ids that are not emails", async () => {
    for (const path of [`/emails/${ids.ann}`, `/emails/${ids.ann}/raw`]) {
      const foreign = await secret("GET", path, undefined, other.secretKey)
      expect(foreign.status, path).toBe(404)
      expect(foreign.json.error.code).toBe("NOT_FOUND")
    }
    expect((await secret("GET", "/emails/not-an-id")).status).toBe(404)
    expect((await secret("GET", "/emails/00000000-0000-7000-8000-000000000001/raw")).status).toBe(404)
  })
})

// Last: it empties the content of every email of the stack.
describe("content retention (EMAIL_CONTENT_RETENTION_DAYS)", () => {
  it("empties sent mail's content once it is older than the retention, keeping the record", async () => {
    // A worker whose clock is two days ahead, keeping content one day: its first sweep finds every email expired.
    const worker = await stack.start("worker", { EMAIL_CONTENT_RETENTION_DAYS: "1", CLOCK_OFFSET_MS: String(2 * 86_400_000) })
    try {
      const expired = await eventually(async () => {
        const detail = await secret("GET", `/emails/${ids.ann}`)
        expect(detail.json.contentExpiredAt).not.toBeNull()
        return detail.json
      })
      expect(expired).toMatchObject({ status: "SENT", subject: "Welcome ann", html: "", previewHtml: "", text: null, attachments: [] })
      expect(expired.timeline.map((entry: { step: string }) => entry.step)).toEqual(["QUEUED", "SENT"])
      const raw = await secret("GET", `/emails/${ids.ann}/raw`)
      expect(raw.status).toBe(404)
      expect(raw.json.error.message).toContain("no longer kept")
      expect((await everyPage(`&templateId=${templateId}`, 100)).map((email) => email.id)).toContain(ids.ann)
    } finally {
      await worker.stop()
    }
  })
})

describe("with a relay (SMTP_URL)", () => {
  let mail: MailStack
  let relayed: Service
  beforeAll(async () => {
    mail = await createMailStack()
    relayed = await mail.stack.start("api")
  })
  afterAll(async () => {
    await mail?.stop()
  })

  it("requires the sender domain verified again, and GET /config says so", async () => {
    const config = await request(relayed.url, "GET", "/config")
    expect(config.json.delivery).toEqual({ mode: "smtp", verifiedDomainRequired: true })
    const key = (await mail.stack.createProject()).secretKey
    const template = await request(relayed.url, "POST", "/templates", {
      key,
      body: { name: "W", subject: "S", body: "<p>B</p>", from: "hello@never-verified.test" }
    })
    expect(template.status).toBe(403)
    expect(template.json.error.message).toContain("never-verified.test")
    const sent = await request(relayed.url, "POST", "/v1/send", {
      key,
      body: { to: "a@example.org", from: "hello@never-verified.test", subject: "S", body: "<p>B</p>" }
    })
    expect(sent.status).toBe(403)
  })
})
