import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const send = (body: unknown, headers: Record<string, string> = {}, key = context.project.secretKey) =>
  request(context.api.url, "POST", "/v1/send", { key, body, headers })
const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })

const base = { from: "hello@acme.test", subject: "Hi", body: "<p>Hello</p>" }

const expectValidation = async (body: unknown, field: string, code?: string) => {
  const res = await send(body)
  expect(res.status, JSON.stringify(res.json)).toBe(422)
  expect(res.json.success).toBe(false)
  expect(res.json.error.code).toBe("VALIDATION_ERROR")
  const match = res.json.error.errors.find((error: { field: string }) => error.field === field)
  expect(match, JSON.stringify(res.json.error.errors)).toBeDefined()
  if (code) expect(match.code).toBe(code)
}

const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))

describe("POST /v1/send: bad input", () => {
  it("rejects a public key with 401 INVALID_API_KEY", async () => {
    const res = await send({ ...base, to: "a@example.org" }, {}, context.project.publicKey)
    expect(res.status).toBe(401)
    expect(res.json.error.code).toBe("INVALID_API_KEY")
  })

  it("checks recipients, content, sender and reply-to", async () => {
    await expectValidation({ ...base, to: "not-an-email" }, "to", "invalid_string")
    await expectValidation({ ...base, to: ["a@example.org", { email: "nope" }] }, "to[1]", "invalid_string")
    await expectValidation({ ...base, to: [] }, "to", "too_small")
    await expectValidation({ from: base.from, to: "a@example.org", body: "x" }, "subject", "required")
    await expectValidation({ from: base.from, to: "a@example.org", subject: "x" }, "body", "required")
    await expectValidation({ ...base, body: "", to: "a@example.org" }, "body", "too_small")
    await expectValidation({ ...base, subject: "a\r\nBcc: x@evil.test", to: "a@example.org" }, "subject", "invalid_string")
    await expectValidation({ ...base, subject: "x".repeat(999), to: "a@example.org" }, "subject", "too_big")
    await expectValidation({ ...base, subject: "", to: "a@example.org" }, "subject", "too_small")
    await expectValidation({ subject: "x", body: "y", to: "a@example.org" }, "from", "required")
    await expectValidation({ ...base, from: "nope", to: "a@example.org" }, "from", "invalid_string")
    await expectValidation({ ...base, reply: "nope", to: "a@example.org" }, "reply", "invalid_string")
    await expectValidation({ ...base, body: "{% if %}", to: "a@example.org" }, "body", "invalid_template")
    // Nothing of the refused requests reached a contact.
    expect((await secret("GET", "/contacts?limit=100")).json.data.map((c: { email: string }) => c.email)).not.toContain("a@example.org")
  })

  it("refuses header injection and overriding our headers", async () => {
    await expectValidation(
      { ...base, to: "a@example.org", headers: { "X-Test": "a\r\nBcc: victim@example.org" } },
      "headers.X-Test",
      "header_injection"
    )
    await expectValidation({ ...base, to: "a@example.org", headers: { "X-Test\r\nBcc": "x" } }, "headers.X-Test\r\nBcc", "header_injection")
    await expectValidation({ ...base, to: "a@example.org", headers: { "X Bad": "x" } }, "headers.X Bad", "invalid_header")
    await expectValidation({ ...base, to: "a@example.org", headers: { "X-Long": "x".repeat(999) } }, "headers.X-Long", "too_big")
    for (const name of ["From", "to", "CC", "Bcc", "Message-ID", "DKIM-Signature"]) {
      await expectValidation({ ...base, to: "a@example.org", headers: { [name]: "x@example.org" } }, `headers.${name}`, "forbidden_header")
    }
  })

  it("limits attachments: at most 10 (422), 10 MB in total (413)", async () => {
    const small = { filename: "a.txt", content: Buffer.from("hello").toString("base64") }
    await expectValidation({ ...base, to: "a@example.org", attachments: Array.from({ length: 11 }, () => small) }, "attachments", "too_big")
    await expectValidation(
      { ...base, to: "a@example.org", attachments: [{ filename: "a.txt", content: "!!not base64!!" }] },
      "attachments[0].content"
    )
    const big = Buffer.alloc(6 * 1024 * 1024, 1).toString("base64")
    const res = await send({
      ...base,
      to: "a@example.org",
      attachments: [{ filename: "a.bin", content: big }, { filename: "b.bin", content: big }]
    })
    expect(res.status).toBe(413)
    expect(res.json.error.message).toMatch(/10 MB/)
    // 6 MB to 10 recipients would be 60 MB of stored mail.
    const many = await send({
      ...base,
      to: Array.from({ length: 10 }, (_, i) => `m${i}@example.org`),
      attachments: [{ filename: "a.bin", content: big }]
    })
    expect(many.status).toBe(413)
    expect(many.json.error.message).toMatch(/fewer recipients/)
  })

  it("checks inline attachments: a sane content id, unique, and one for every inline part (422)", async () => {
    const png = { filename: "logo.png", content: Buffer.from("png").toString("base64"), contentType: "image/png" }
    const to = "a@example.org"
    await expectValidation({ ...base, to, attachments: [{ ...png, disposition: "inline" }] }, "attachments[0].contentId", "required")
    await expectValidation(
      { ...base, to, attachments: [{ ...png, contentId: "logo\r\nBcc: x@evil.test" }] },
      "attachments[0].contentId",
      "invalid_string"
    )
    await expectValidation({ ...base, to, attachments: [{ ...png, contentId: "my logo" }] }, "attachments[0].contentId", "invalid_string")
    await expectValidation({ ...base, to, attachments: [{ ...png, contentId: "" }] }, "attachments[0].contentId", "invalid_string")
    await expectValidation(
      { ...base, to, attachments: [{ ...png, contentId: "x".repeat(201) }] },
      "attachments[0].contentId",
      "invalid_string"
    )
    await expectValidation(
      { ...base, to, attachments: [{ ...png, contentId: "logo" }, { ...png, filename: "b.png", contentId: "<logo>" }] },
      "attachments[1].contentId",
      "duplicate"
    )
    await expectValidation(
      { ...base, to, attachments: [{ ...png, contentId: "logo", disposition: "sideways" }] },
      "attachments[0].disposition"
    )
    expect(mailsTo(to)).toHaveLength(0)
  })

  it("answers 403 (code INTERNAL_SERVER_ERROR, naming the domain) for an unverified sender domain", async () => {
    const res = await send({ ...base, from: "me@unverified.test", to: "a@example.org" })
    expect(res.status).toBe(403)
    expect(res.json.error).toMatchObject({ code: "INTERNAL_SERVER_ERROR", statusCode: 403 })
    expect(res.json.error.message).toContain("unverified.test")
  })

  it("answers 404 for a template of another project or none", async () => {
    const other = await context.stack.createProject("other")
    const res = await send({ to: "a@example.org", template: "0190c3a4-0000-7000-8000-000000000000" })
    expect(res.status).toBe(404)
    const foreign = await request(context.api.url, "POST", "/v1/send", { key: other.secretKey, body: { ...base, to: "a@example.org" } })
    expect(foreign.status).toBe(403) // the other project has not verified acme.test
  })
})

describe("POST /v1/send: recipients and contacts", () => {
  it("sends one email per recipient, in order; new contacts are unsubscribed, existing keep their state", async () => {
    await secret("POST", "/contacts", { email: "kept@example.org", subscribed: true })
    const res = await send({ ...base, to: ["first@example.org", { name: "Kept", email: "kept@example.org" }, "third@example.org"] })
    expect(res.status).toBe(200)
    expect(res.json.data.emails.map((e: { contact: { email: string } }) => e.contact.email)).toEqual([
      "first@example.org",
      "kept@example.org",
      "third@example.org"
    ])
    const ids = res.json.data.emails.map((e: { email: string }) => e.email)
    expect(new Set(ids).size).toBe(3)
    for (const id of ids) await emailStatus(context, id, "SENT")
    const contacts = (await secret("GET", "/contacts?limit=100")).json.data
    const state = Object.fromEntries(contacts.map((c: { email: string; subscribed: boolean }) => [c.email, c.subscribed]))
    expect(state).toMatchObject({ "first@example.org": false, "kept@example.org": true, "third@example.org": false })
    expect(mailsTo("kept@example.org")).toHaveLength(1)
  })

  it("changes subscription only when `subscribed` is sent, emitting contact.subscribed", async () => {
    const res = await send({ ...base, to: "optin@example.org", subscribed: true, data: { plan: "pro" } })
    expect(res.status).toBe(200)
    const contactId = res.json.data.emails[0].contact.id
    const contact = (await secret("GET", `/contacts/${contactId}`)).json
    expect(contact).toMatchObject({ subscribed: true, data: { plan: "pro" } })
    await eventually(async () => {
      const events = (await secret("GET", `/events/contact/${contactId}`)).json
      const names = (events.data ?? events).map((e: { name: string }) => e.name)
      expect(names).toContain("contact.subscribed")
    })
  })

  it("uses a template with explicit overrides, the deprecated name, and non-persistent data", async () => {
    const template = await secret("POST", "/templates", {
      name: "Welcome",
      subject: 'Welcome {{ name ?? "friend" }}',
      body: "<p>Code {{ code }} for {{ email }}, tier {{ profile.tier }}</p>",
      from: "team@acme.test",
      fromName: "Team",
      replyTo: "reply@acme.test",
      type: "TRANSACTIONAL"
    })
    expect(template.status).toBe(201)
    const res = await send({
      to: "tpl@example.org",
      template: template.json.id,
      from: "news@acme.test",
      name: "Newsroom",
      data: { code: { value: "X-1", persistent: false }, profile: { tier: "gold" } }
    })
    expect(res.status).toBe(200)
    const [mail] = await eventually(async () => {
      const found = mailsTo("tpl@example.org")
      expect(found).toHaveLength(1)
      return found
    })
    expect(mail!.parsed.subject).toBe("Welcome friend")
    expect(mail!.parsed.from?.value[0]).toEqual({ name: "Newsroom", address: "news@acme.test" })
    expect(mail!.parsed.replyTo?.value[0]?.address).toBe("reply@acme.test")
    expect(mail!.parsed.html).toContain("Code X-1 for tpl@example.org, tier gold")
    const contact = (await secret("GET", `/contacts/${res.json.data.emails[0].contact.id}`)).json
    expect(contact.data).toEqual({ profile: { tier: "gold" } })
    const record = await emailStatus(context, res.json.data.emails[0].email, "SENT")
    expect(record.templateId).toBe(template.json.id)
  })

  it("sends attachments", async () => {
    const res = await send({
      ...base,
      to: "files@example.org",
      attachments: [{ filename: "note.txt", content: Buffer.from("hello file").toString("base64"), contentType: "text/plain" }]
    })
    expect(res.status).toBe(200)
    const [mail] = await eventually(async () => {
      const found = mailsTo("files@example.org")
      expect(found).toHaveLength(1)
      return found
    })
    expect(mail!.parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([["note.txt", "hello file"]])
  })

  it("sends inline attachments in multipart/related under their Content-ID, so the body's cid: reference works", async () => {
    const logo = Buffer.from("\x89PNG\r\n\x1a\n not really a png")
    const res = await send({
      ...base,
      to: "inline@example.org",
      body: '<p>Hello</p><img src="cid:logo.png@acme" alt="Acme">',
      attachments: [
        {
          filename: "logo.png",
          content: logo.toString("base64"),
          contentType: "image/png",
          contentId: "logo.png@acme",
          disposition: "inline"
        },
        { filename: "terms.txt", content: Buffer.from("the terms").toString("base64"), contentType: "text/plain" }
      ]
    })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    const [mail] = await eventually(async () => {
      const found = mailsTo("inline@example.org")
      expect(found).toHaveLength(1)
      return found
    })
    const { raw, parsed } = mail!
    // mixed(related(alternative(text, html), logo), terms): the logo beside the HTML, the terms an ordinary attachment.
    expect(raw).toMatch(/^Content-Type: multipart\/mixed/im)
    expect(raw).toMatch(/^Content-Type: multipart\/related; type="text\/html"/im)
    const logoHead = raw.slice(raw.search(/^Content-Type: image\/png/im)).split(/\r?\n\r?\n/)[0]
    expect(logoHead).toMatch(/^Content-Id: <logo\.png@acme>\r?$/im)
    expect(logoHead).toMatch(/^Content-Disposition: inline/im)
    const [inline, attached] = parsed.attachments
    expect(inline).toMatchObject({
      filename: "logo.png",
      contentId: "<logo.png@acme>",
      cid: "logo.png@acme",
      contentDisposition: "inline",
      related: true
    })
    expect(inline!.content.equals(logo)).toBe(true)
    expect(attached).toMatchObject({ filename: "terms.txt", contentDisposition: "attachment" })
    expect(attached!.related).toBeFalsy()
    // The HTML as sent references the part; a mail reader (mailparser here) resolves the reference to it.
    expect(raw).toContain("cid:logo.png@acme")
    expect(parsed.html).toContain(`<img src="data:image/png;base64,${logo.toString("base64")}" alt="Acme">`)
    // The email's record names the inline part.
    const detail = await secret("GET", `/emails/${res.json.data.emails[0].email}`)
    expect(detail.json.attachments).toEqual([
      { filename: "logo.png", contentType: "image/png", contentId: "logo.png@acme", disposition: "inline", size: logo.length },
      { filename: "terms.txt", contentType: "text/plain", contentId: null, disposition: "attachment", size: 9 }
    ])
  })

  it("fails fast on hostile templates: no file includes, no runaway loops", async () => {
    const include = await send({ ...base, to: "h@example.org", body: "{% include '/etc/passwd' %}" })
    expect(include.status).toBe(422)
    // Refused as it is read, before anything renders (issue 34: file tags are refused when a body is saved).
    expect(include.json.error.errors[0]).toMatchObject({ field: "body", code: "invalid_template" })
    const started = Date.now()
    const loop = await send({
      ...base,
      to: "h@example.org",
      body: "{% for i in (1..1000000) %}{% for j in (1..1000000) %}x{% endfor %}{% endfor %}"
    })
    expect(loop.status).toBe(422)
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(mailsTo("h@example.org")).toHaveLength(0)
  })

  it("honours Idempotency-Key: a repeat is 409 and sends nothing more", async () => {
    const headers = { "idempotency-key": "send-once-1" }
    const first = await send({ ...base, to: "idem@example.org" }, headers)
    expect(first.status).toBe(200)
    const second = await send({ ...base, to: "idem@example.org" }, headers)
    expect(second.status).toBe(409)
    expect(second.json.error.code).toBe("IDEMPOTENCY_KEY_REUSED")
    expect(second.json.error.details).toMatchObject({ originalStatusCode: 200, inProgress: false, originalResponse: first.json })
    await emailStatus(context, first.json.data.emails[0].email, "SENT")
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(mailsTo("idem@example.org")).toHaveLength(1)
  })

  it("keeps another project's email records out of reach (404)", async () => {
    const res = await send({ ...base, to: "scoped@example.org" })
    const other = await context.stack.createProject("other-2")
    const foreign = await request(context.api.url, "GET", `/emails/${res.json.data.emails[0].email}`, { key: other.secretKey })
    expect(foreign.status).toBe(404)
  })
})
