import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestDnsServer } from "../support/dns.ts"
import { createMailStack, type MailStack, verifyDomain } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import type { SmtpSink } from "../support/smtp.ts"
import { request, type Service, type Stack, type TestProject } from "../support/stack.ts"

// An api and a separate worker, so the worker can run on a shifted clock or be killed.
let mail: MailStack
let dns: TestDnsServer
let smtp: SmtpSink
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  mail = await createMailStack({ SEND_RATE_PER_SECOND: "40" })
  ;({ stack, dns, smtp } = mail)
  api = await stack.start("api")
  project = await stack.createProject()
  await verifyDomain({ api, dns }, project.secretKey, "acme.test")
})

afterAll(async () => {
  await mail?.stop()
})

const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })

const audience = async (tag: string, count: number) => {
  for (let i = 0; i < count; i++) await secret("POST", "/contacts", { email: `${tag}${i}@example.org`, subscribed: true, data: { tag } })
  return { logic: "AND", groups: [{ filters: [{ field: "data.tag", operator: "equals", value: tag }] }] }
}

const createCampaign = async (tag: string, count: number) => {
  const res = await secret("POST", "/campaigns", {
    name: `Campaign ${tag}`,
    subject: "Hi",
    body: "<p>{{ email }}</p>",
    from: "news@acme.test",
    audienceType: "FILTERED",
    audienceCondition: await audience(tag, count)
  })
  expect(res.status).toBe(201)
  return res.json.data.id as string
}

const mailsFor = (tag: string) => smtp.messages.filter((mail) => mail.envelopeTo[0]?.startsWith(tag))

describe("scheduled campaigns", () => {
  it("fire at their time by the worker's clock, durably", async () => {
    const id = await createCampaign("sched", 3)
    const at = new Date(Date.now() + 3_600_000)
    const scheduled = await secret("POST", `/campaigns/${id}/send`, { scheduledFor: at.toISOString() })
    expect(scheduled.json.data.status).toBe("SCHEDULED")
    // A worker whose clock reads 8 s before the scheduled time (margin for a loaded machine): nothing yet.
    const worker = await stack.start("worker", { METRICS_PORT: "0", CLOCK_OFFSET_MS: String(3_600_000 - 8_000) })
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect((await secret("GET", `/campaigns/${id}`)).json.status).toBe("SCHEDULED")
      expect(mailsFor("sched")).toHaveLength(0)
      const sent = await eventually(async () => {
        const campaign = (await secret("GET", `/campaigns/${id}`)).json
        expect(campaign.status).toBe("SENT")
        return campaign
      }, 20_000)
      expect(sent.sentCount).toBe(3)
      expect(mailsFor("sched")).toHaveLength(3)
      // Not early: the first mail left at (or after) the scheduled instant on the worker's clock.
      const firstArrival = Math.min(...mailsFor("sched").map((mail) => mail.receivedAt))
      expect(firstArrival + 3_600_000 - 8_000).toBeGreaterThanOrEqual(at.getTime() - 100)
    } finally {
      await worker.stop()
    }
  }, 40_000)
})

describe("a worker killed mid-campaign", () => {
  it("resumes where it stopped: every recipient gets the mail, counters stay exact", async () => {
    const id = await createCampaign("kill", 200)
    let worker = await stack.start("worker", { METRICS_PORT: "0" })
    await secret("POST", `/campaigns/${id}/send`, {})
    // At 40/s the campaign takes 5 s: kill the worker in the middle of it.
    await eventually(async () => expect(mailsFor("kill").length).toBeGreaterThan(50), 15_000)
    await worker.stop("SIGKILL")
    expect(mailsFor("kill").length).toBeLessThan(200)
    worker = await stack.start("worker", { METRICS_PORT: "0" })
    try {
      const done = await eventually(async () => {
        const campaign = (await secret("GET", `/campaigns/${id}`)).json
        expect(campaign.status).toBe("SENT")
        return campaign
      }, 40_000)
      const recipients = mailsFor("kill").map((mail) => mail.envelopeTo[0])
      expect(new Set(recipients).size).toBe(200)
      // SMTP acceptance and our record of it cannot be one transaction: only a round that was in
      // flight at the kill (at 40/s, at most 4 messages) can arrive twice, with the same Message-ID.
      expect(recipients.length - 200).toBeLessThanOrEqual(4)
      const messageIds = mailsFor("kill").map((mail) => mail.parsed.messageId)
      expect(new Set(messageIds).size).toBe(200)
      expect(done).toMatchObject({ totalRecipients: 200, sentCount: 200 })
      const stats = (await secret("GET", `/campaigns/${id}/stats`)).json
      expect(stats).toMatchObject({ sent: 200, failed: 0, pending: 0 })
    } finally {
      await worker.stop()
    }
  }, 90_000)
})
