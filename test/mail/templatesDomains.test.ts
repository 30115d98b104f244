import { describe, expect, it } from "vitest"
import { type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })

const template = (overrides: Record<string, unknown> = {}) => ({
  name: "Welcome",
  subject: "Hello {{ name }}",
  body: "<p>Hi</p>",
  from: "hello@acme.test",
  ...overrides
})

describe("templates", () => {
  it("creates with defaults (201); LegacyError 400 without a required field; 403 naming an unverified domain; 422 for bad fields", async () => {
    const created = await secret("POST", "/templates", template({ description: "first mail" }))
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({
      id: expect.any(String),
      name: "Welcome",
      description: "first mail",
      from: "hello@acme.test",
      fromName: null,
      replyTo: null,
      type: "MARKETING",
      projectId: context.project.id
    })
    const missingFrom = await secret("POST", "/templates", { name: "x", subject: "s", body: "b" })
    expect(missingFrom.status).toBe(400)
    expect(missingFrom.json).toEqual({ error: expect.stringContaining("from") })
    for (const field of ["name", "subject", "body"]) {
      const missing = await secret("POST", "/templates", template({ [field]: undefined }))
      expect(missing.status, field).toBe(400)
      expect(missing.json, field).toEqual({ error: `${field} is required` })
    }
    expect((await secret("POST", "/templates", { body: "b" })).json).toEqual({ error: "name, subject, from are required" })
    const unverified = await secret("POST", "/templates", template({ from: "me@elsewhere.test" }))
    expect(unverified.status).toBe(403)
    expect(unverified.json.error).toMatchObject({ statusCode: 403, code: "INTERNAL_SERVER_ERROR" })
    expect(unverified.json.error.message).toContain("elsewhere.test")
    const invalid = await secret("POST", "/templates", template({ subject: "a\nb", body: "{% for %}", replyTo: "nope" }))
    expect(invalid.status).toBe(422)
    expect(invalid.json.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(["body", "replyTo", "subject"])
    expect((await secret("POST", "/templates", template(), context.project.publicKey)).status).toBe(401)
  })

  it("lists with type filter, case-insensitive search, sort, direction and fallbacks", async () => {
    const names = ["Alpha receipt", "beta news", "Gamma Receipt"]
    for (const [index, name] of names.entries()) {
      await secret(
        "POST",
        "/templates",
        template({ name, type: index === 1 ? "MARKETING" : "TRANSACTIONAL", description: `about ${name}` })
      )
    }
    const receipts = await secret("GET", "/templates?search=RECEIPT&sort=name&dir=asc")
    expect(receipts.json.data.map((t: { name: string }) => t.name)).toEqual(["Alpha receipt", "Gamma Receipt"])
    const transactional = await secret("GET", "/templates?type=TRANSACTIONAL&pageSize=1&page=2&sort=name&dir=asc")
    expect(transactional.json).toMatchObject({ page: 2, pageSize: 1, total: 2, totalPages: 2 })
    expect(transactional.json.data[0].name).toBe("Gamma Receipt")
    // Unrecognised values fall back: type ignored, createdAt desc.
    const fallback = await secret("GET", "/templates?type=BOGUS&sort=bogus&dir=sideways&page=0&pageSize=-3")
    expect(fallback.json).toMatchObject({ page: 1, pageSize: 20 })
    const created = fallback.json.data.map((t: { createdAt: string }) => t.createdAt)
    expect(created).toEqual([...created].sort().reverse())
    const openapi: any = await fetch(`${context.api.url}/openapi.json`).then((r) => r.json())
    const parameters = openapi.paths["/templates"].get.parameters.map((p: { name: string }) => p.name)
    expect(parameters).toEqual(expect.arrayContaining(["page", "pageSize", "type", "search", "sort", "dir"]))
  })

  it("gets, patches, duplicates, reports usage and deletes; another project's id is 404", async () => {
    const { json: created } = await secret("POST", "/templates", template({ name: "Editable" }))
    const patched = await secret("PATCH", `/templates/${created.id}`, { subject: "New subject", fromName: "Acme" })
    expect(patched.json).toMatchObject({ subject: "New subject", fromName: "Acme", name: "Editable" })
    expect(Date.parse(patched.json.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt))
    expect((await secret("PATCH", `/templates/${created.id}`, { from: "x@unverified.test" })).status).toBe(403)
    const copy = await secret("POST", `/templates/${created.id}/duplicate`)
    expect(copy.status).toBe(201)
    expect(copy.json).toEqual({ id: expect.any(String) })
    expect((await secret("GET", `/templates/${copy.json.id}`)).json).toMatchObject({ name: "Editable (Copy)", subject: "New subject" })
    expect((await secret("GET", `/templates/${created.id}/usage`)).json).toEqual({ campaigns: [], workflows: [] })

    const other = await context.stack.createProject("other")
    for (const [method, path] of [["GET", ""], ["PATCH", ""], ["DELETE", ""], ["POST", "/duplicate"], ["GET", "/usage"]] as const) {
      const res = await secret(method, `/templates/${created.id}${path}`, method === "PATCH" ? { name: "x" } : undefined, other.secretKey)
      expect(res.status, `${method} ${path}`).toBe(404)
    }
    expect((await secret("DELETE", `/templates/${created.id}`)).json).toEqual({ success: true })
    expect((await secret("GET", `/templates/${created.id}`)).status).toBe(404)
    expect((await secret("GET", "/templates/not-a-uuid")).status).toBe(404)
  })

  it("previews a subject and body for a contact of the project or a sample one; 422 names a broken field", async () => {
    const { json: contact } = await secret("POST", "/contacts", { email: "ada@example.com", data: { firstName: "Ada", plan: "<pro>" } })
    const body = '<p>Hi {{ firstName }}, plan {{ plan ?? "free" }}</p><a href="{{ unsubscribeUrl }}">stop</a>'
    const preview = await secret("POST", "/templates/preview", { subject: "Hello\n{{ firstName }}", body, contactId: contact.id })
    expect(preview.status).toBe(200)
    expect(preview.json.subject).toBe("Hello Ada")
    // HTML output is escaped, as in sent mail; links are the contact's own.
    expect(preview.json.html).toMatch(/^<p>Hi Ada, plan &lt;pro&gt;<\/p><a href="http[^"]+\/unsubscribe\/[^"]+">stop<\/a>$/)
    expect(preview.json.contact).toEqual({ id: contact.id, email: "ada@example.com" })

    const sample = await secret("POST", "/templates/preview", { subject: "For {{ email }}", body: '<p>{{ plan ?? "free" }}</p>' })
    expect(sample.json).toMatchObject({ subject: "For jane@example.com", html: "<p>free</p>", contact: { id: null } })

    const broken = await secret("POST", "/templates/preview", { subject: "{{ x", body: "{% if %}" })
    expect(broken.status).toBe(422)
    expect(broken.json.error.errors.map((error: { field: string }) => error.field).sort()).toEqual(["body", "subject"])

    const other = await context.stack.createProject("other preview")
    const foreign = await secret("POST", "/templates/preview", { subject: "s", body: "b", contactId: contact.id }, other.secretKey)
    expect(foreign.status).toBe(404)
    expect((await secret("POST", "/templates/preview", { subject: "s", body: "b", contactId: "nope" })).status).toBe(404)
  })
})

describe("domains", () => {
  it("returns the records to publish and verifies against DNS: correct, missing, wrong, timeout", async () => {
    const created = await secret("POST", "/domains", { domain: "Mail.Example.TEST" })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ domain: "mail.example.test", verified: false, status: "PENDING", lastCheckedAt: null })
    const records = created.json.records as Array<{ purpose: string; name: string; value: string; type: string }>
    expect(records.map((r) => [r.purpose, r.type, r.name])).toEqual([
      ["DKIM", "TXT", expect.stringMatching(/^ms\d{8}\._domainkey\.mail\.example\.test$/)],
      ["SPF", "TXT", "mail.example.test"],
      ["DMARC", "TXT", "_dmarc.mail.example.test"]
    ])
    const dkim = records[0]!
    expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/)

    const check = () => secret("GET", `/domains/${created.json.id}/verify`)
    // Missing.
    let checked = await check()
    expect(checked.json).toMatchObject({ status: "PENDING", verified: false, lastCheckedAt: expect.any(String) })
    expect(checked.json.records.map((r: { status: string }) => r.status)).toEqual(["MISSING", "MISSING", "MISSING"])
    // Wrong key published.
    context.dns.addTxt(dkim.name, "v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong")
    checked = await check()
    expect(checked.json).toMatchObject({ status: "FAILED", verified: false })
    expect(checked.json.records[0].status).toBe("MISMATCH")
    // Right key (DNS may split long TXT values into character-strings), SPF and DMARC.
    context.dns.removeTxt(dkim.name)
    context.dns.addTxt(dkim.name, dkim.value)
    context.dns.addTxt("mail.example.test", "v=spf1 include:relay.example.test ~all")
    context.dns.addTxt("_dmarc.mail.example.test", "v=DMARC1; p=quarantine")
    checked = await check()
    expect(checked.json).toMatchObject({ status: "VERIFIED", verified: true })
    expect(checked.json.records.map((r: { status: string }) => r.status)).toEqual(["VERIFIED", "VERIFIED", "VERIFIED"])
    // A lookup that times out changes nothing: still verified, the record UNKNOWN.
    context.dns.silence(dkim.name)
    checked = await check()
    expect(checked.json).toMatchObject({ status: "VERIFIED", verified: true })
    expect(checked.json.records[0].status).toBe("UNKNOWN")
    context.dns.unsilence(dkim.name)
  }, 20_000)

  it("never verifies a domain on a timeout", async () => {
    const created = await secret("POST", "/domains", { domain: "slow.example.test" })
    const dkim = created.json.records[0]
    context.dns.silence(dkim.name)
    const checked = await secret("GET", `/domains/${created.json.id}/verify`)
    expect(checked.json).toMatchObject({ status: "PENDING", verified: false })
    expect(checked.json.records[0].status).toBe("UNKNOWN")
  }, 20_000)

  it("lists the project's domains only, refuses duplicates and bad names, deletes", async () => {
    expect((await secret("POST", "/domains", { domain: "acme.test" })).status).toBe(409)
    expect((await secret("POST", "/domains", { domain: "not a domain" })).status).toBe(422)
    expect((await secret("POST", "/domains", { domain: "x.test", projectId: "someone-else" })).status).toBe(403)
    const listed = await secret("GET", `/domains/project/${context.project.id}`)
    expect(listed.json.map((d: { domain: string }) => d.domain)).toEqual(expect.arrayContaining(["acme.test", "mail.example.test"]))
    expect(listed.json.find((d: { domain: string }) => d.domain === "acme.test").verified).toBe(true)

    const other = await context.stack.createProject("other-domains")
    expect((await secret("GET", `/domains/project/${context.project.id}`, undefined, other.secretKey)).status).toBe(404)
    const mine = listed.json.find((d: { domain: string }) => d.domain === "mail.example.test")
    expect((await secret("GET", `/domains/${mine.id}/verify`, undefined, other.secretKey)).status).toBe(404)
    expect((await secret("DELETE", `/domains/${mine.id}`, undefined, other.secretKey)).status).toBe(404)
    // The same domain in another project is that project's own, to verify with its own key.
    const theirs = await verifyDomain({ api: context.api, dns: context.dns }, other.secretKey, "shared.example.test")
    expect(theirs.verified).toBe(true)

    expect((await secret("DELETE", `/domains/${mine.id}`)).json).toEqual({ success: true })
    expect((await secret("GET", `/domains/${mine.id}`)).status).toBe(404)
  })
})

describe("the background domain check", () => {
  it("verifies a domain once its record appears, and unverifies it when the record goes", async () => {
    const stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", DNS_SERVERS: context.dns.address, DOMAIN_RECHECK_SECONDS: "1" })
    try {
      const api = await stack.start("all")
      const project = await stack.createProject()
      const created = await request(api.url, "POST", "/domains", { key: project.secretKey, body: { domain: "later.example.test" } })
      const get = () => request(api.url, "GET", `/domains/${created.json.id}`, { key: project.secretKey })
      const dkim = created.json.records[0]
      context.dns.addTxt(dkim.name, dkim.value)
      await eventually(async () => expect((await get()).json.status).toBe("VERIFIED"), 10_000)
      context.dns.removeTxt(dkim.name)
      await eventually(async () => expect((await get()).json.status).toBe("PENDING"), 10_000)
      await api.stop()
    } finally {
      await stack.stop()
    }
  })
})
