/**
 * The platform's own mail (verification, reset, invitations) against a real SMTP relay (smtp-server):
 * a request only queues it, so its answer does not wait on the relay (and a reset request does the
 * same work whether or not the email has an account); the relay refusing for a while delays the mail,
 * a permanent refusal ends it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startSmtpSink, type SmtpSink } from "../support/smtp.ts"
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { Browser, signUp } from "./support.ts"

let stack: Stack
let api: Service
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", SMTP_URL: smtp.url })
  api = await stack.start("api")
  await signUp(api.url, "operator@example.com")
})
afterAll(async () => {
  await stack?.stop()
  await smtp?.close()
})

const mailTo = (address: string, subject: string) =>
  smtp.messages.filter((message) => message.envelopeTo.includes(address) && message.parsed.subject === subject)

/** Resolves once a message with `subject` reached `address` (or fails after `timeoutMs`). */
const arrival = async (address: string, subject: string, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (mailTo(address, subject).length === 0) {
    if (Date.now() > deadline) throw new Error(`no "${subject}" to ${address} within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return mailTo(address, subject)[0]!
}

const queued = async () => (await stack.query("SELECT 1 FROM platform_mail")).length

describe("platform mail", () => {
  it("answers a reset request before its mail goes out: a slow relay does not slow the answer", async () => {
    await signUp(api.url, "slow@example.com")
    await arrival("slow@example.com", "Verify your email", 5_000)
    smtp.delays.set("slow@example.com", 3_000)
    const started = performance.now()
    const reply = await new Browser(api.url).post("/auth/request-password-reset", { email: "slow@example.com" })
    const answeredIn = performance.now() - started
    expect(reply.json).toEqual({ success: true })
    expect(answeredIn).toBeLessThan(1_500)
    expect(mailTo("slow@example.com", "Reset your password")).toHaveLength(0)
    const mail = await arrival("slow@example.com", "Reset your password", 10_000)
    expect(mail.receivedAt - started).toBeGreaterThanOrEqual(3_000)
    expect(mail.parsed.text).toMatch(/\/reset-password\?token=/)
  })

  it("retries mail the relay refused for a while, instead of losing it", async () => {
    smtp.failures.set("refused-at-first@example.com", { code: 451, times: 2 })
    const started = Date.now()
    await signUp(api.url, "refused-at-first@example.com")
    const mail = await arrival("refused-at-first@example.com", "Verify your email", 20_000)
    expect(smtp.failures.get("refused-at-first@example.com")!.times).toBe(0)
    // Two refusals, then retries 2 s and 4 s apart.
    expect(mail.receivedAt - started).toBeGreaterThanOrEqual(5_500)
    expect(await queued()).toBe(0)
  })

  it("gives a message up on a permanent refusal", async () => {
    smtp.failures.set("no-such-mailbox@example.com", { code: 550, times: 5 })
    await signUp(api.url, "no-such-mailbox@example.com")
    await expect.poll(() => smtp.failures.get("no-such-mailbox@example.com")!.times, { timeout: 5_000 }).toBe(4)
    await expect.poll(queued, { timeout: 5_000 }).toBe(0)
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    expect(smtp.failures.get("no-such-mailbox@example.com")!.times).toBe(4)
    expect(mailTo("no-such-mailbox@example.com", "Verify your email")).toHaveLength(0)
  })

  it("does the same for a reset request whether or not the email has an account, and mails only the account", async () => {
    const before = smtp.messages.length
    for (const email of ["slow@example.com", "nobody-here@example.com"]) {
      expect((await new Browser(api.url).post("/auth/request-password-reset", { email })).json).toEqual({ success: true })
    }
    await expect.poll(queued, { timeout: 5_000 }).toBe(0)
    // slow@ was mailed a link a moment ago (one a minute), nobody-here@ has no account: nothing went out.
    expect(smtp.messages.length).toBe(before)
  })
})
