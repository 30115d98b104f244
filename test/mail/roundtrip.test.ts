import { authenticate } from "mailauth"
import { Resolver } from "node:dns/promises"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const send = (body: unknown, headers: Record<string, string> = {}) =>
  request(context.api.url, "POST", "/v1/send", { key: context.project.secretKey, body, headers })
const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })

/** mailauth resolving through the test DNS server, as a receiving MTA would through the real one. */
const dkimOf = async (raw: string) => {
  const resolver = new Resolver()
  resolver.setServers([context.dns.address])
  const result = await authenticate(raw, {
    trustReceived: false,
    ip: "127.0.0.1",
    helo: "test",
    sender: "hello@acme.test",
    resolver: async (name: string, type: string) => {
      if (type === "TXT") return resolver.resolveTxt(name)
      if (type === "MX") return resolver.resolveMx(name)
      if (type === "A") return resolver.resolve4(name)
      if (type === "AAAA") return resolver.resolve6(name)
      return resolver.resolve(name, type as "TXT")
    }
  })
  return result.dkim
}

describe("a real SMTP round trip", () => {
  it("renders, signs with DKIM (pass), records the Message-ID and emits email.sent", async () => {
    const before = context.smtp.messages.length
    const res = await send({
      to: { name: "Ann Example", email: "Ann@Example.org" },
      from: { name: "Acme", email: "hello@acme.test" },
      subject: 'Hello {{ first name ?? "there" }}',
      body: '<p>Hi {{ first name }} ({{ plan | upcase }})</p><p><a href="https://acme.test/pricing?a=1&amp;b=2">Pricing</a> ' +
        '<a href="mailto:help@acme.test">Mail us</a> <a href="#top">Top</a> <a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
      data: { "first name": "Ann", plan: "pro" },
      reply: "support@acme.test",
      headers: { "X-Campaign": "welcome" }
    })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      success: true,
      data: {
        emails: [{ contact: { id: expect.any(String), email: "ann@example.org" }, email: expect.stringMatching(/^[0-9a-f-]{36}$/) }],
        timestamp: expect.any(String)
      }
    })
    const emailId = res.json.data.emails[0].email
    const [mail] = (await context.smtp.waitFor(before + 1)).slice(before)
    const parsed = mail!.parsed
    expect(parsed.subject).toBe("Hello Ann")
    expect(parsed.from?.value[0]).toEqual({ name: "Acme", address: "hello@acme.test" })
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value[0] : undefined).toEqual({
      name: "Ann Example",
      address: "ann@example.org"
    })
    expect(parsed.replyTo?.value[0]?.address).toBe("support@acme.test")
    expect(parsed.headers.get("x-campaign")).toBe("welcome")
    expect(parsed.html).toContain("Hi Ann (PRO)")
    // Links: http(s) rewritten to signed click redirects; mailto and anchors untouched; pixel appended.
    expect(parsed.html).toContain('href="mailto:help@acme.test"')
    expect(parsed.html).toContain('href="#top"')
    expect(parsed.html).not.toContain("https://acme.test/pricing")
    expect(parsed.html).toMatch(/\/t\/o\/[0-9a-f-]{36}\/[\w-]+\.gif/)

    // The body links to the unsubscribe page, so RFC 8058 headers are there, and signed.
    const header = (name: string) => parsed.headerLines.find((line) => line.key === name)?.line.replace(/^[^:]+:\s*/, "")
    // The link names the email it came in (`?e=`): an unsubscribe through it counts for the email's campaign.
    expect(header("list-unsubscribe")).toMatch(
      new RegExp(`^<http://127\\.0\\.0\\.1:\\d+/unsubscribe/[0-9a-f-]{36}\\.[\\w-]+\\?e=${emailId}>$`)
    )
    expect(header("list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click")
    const dkim = await dkimOf(mail!.raw)
    expect(dkim.results[0]?.status.result).toBe("pass")
    expect(dkim.results[0]?.signingDomain).toBe("acme.test")
    const signed = String(dkim.results[0]?.signingHeaders?.keys ?? "").toLowerCase()
    expect(signed).toContain("list-unsubscribe")
    expect(signed).toContain("list-unsubscribe-post")

    const record = await emailStatus(context, emailId, "SENT")
    expect(parsed.messageId).toBe(`<${record.messageId}>`)
    expect(record.sentAt).toEqual(expect.any(String))
    const sentEvent = await eventually(async () => {
      const listed = await secret("GET", `/events?name=email.sent`)
      const found = listed.json.data.find((event: { data: { emailId: string } }) => event.data.emailId === emailId)
      expect(found).toBeDefined()
      return found
    })
    expect(sentEvent).toMatchObject({
      name: "email.sent",
      email: "ann@example.org",
      data: { emailId, subject: "Hello Ann" }
    })
  })
})

describe("without an SMTP relay", () => {
  it("writes each signed message to the file outbox", async () => {
    const outbox = mkdtempSync(join(tmpdir(), "outbox-"))
    const stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", SMTP_URL: "", OUTBOX_DIR: outbox, DNS_SERVERS: context.dns.address })
    try {
      const api = await stack.start("all")
      const project = await stack.createProject()
      await verifyDomain({ api, dns: context.dns }, project.secretKey, "files.test")
      const res = await request(api.url, "POST", "/v1/send", {
        key: project.secretKey,
        body: { to: "dev@example.org", from: "app@files.test", subject: "Local", body: "<p>dev</p>" }
      })
      const record = await emailStatus({ api, project }, res.json.data.emails[0].email, "SENT")
      const files = readdirSync(outbox)
      expect(files).toEqual([`${record.messageId}.eml`])
      const raw = readFileSync(join(outbox, files[0]!), "utf8")
      expect(raw).toContain("Subject: Local")
      expect((await dkimOf(raw)).results[0]?.status.result).toBe("pass")
      await api.stop()
    } finally {
      await stack.stop()
    }
  })
})
