import { describe, expect, it } from "vitest"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })

const campaignBody = (overrides: Record<string, unknown> = {}) => ({
  name: "Launch",
  subject: 'Hello {{ first ?? "there" }}',
  body: "<p>News for {{ email }}</p>",
  from: "news@acme.test",
  audienceType: "ALL",
  ...overrides
})

const create = async (overrides: Record<string, unknown> = {}) => {
  const res = await secret("POST", "/campaigns", campaignBody(overrides))
  expect(res.status, JSON.stringify(res.json)).toBe(201)
  return res.json.data
}

/** Contacts in their own address namespace, so each test's audience is its own. */
const contactsFor = async (tag: string, count: number, extra: (i: number) => Record<string, unknown> = () => ({})) => {
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    const res = await secret("POST", "/contacts", { email: `${tag}${i}@example.org`, subscribed: true, data: { tag, ...extra(i) } })
    ids.push(res.json.id)
  }
  return ids
}

const mailsFor = (tag: string) => context.smtp.messages.filter((mail) => mail.envelopeTo[0]?.startsWith(tag))

const waitStatus = (id: string, status: string, timeoutMs = 15_000) =>
  eventually(async () => {
    const res = await secret("GET", `/campaigns/${id}`)
    expect(res.json.status).toBe(status)
    return res.json
  }, timeoutMs)

const byTag = (tag: string) => ({
  logic: "AND",
  groups: [{ filters: [{ field: "data.tag", operator: "equals", value: tag }] }]
})

describe("campaign API", () => {
  it("creates DRAFTs (201) and refuses bad input (422; 400 for a missing audience field alone), unverified senders (403) and public keys (401)", async () => {
    const created = await create({ description: "first", fromName: "Acme" })
    expect(created).toMatchObject({
      name: "Launch",
      status: "DRAFT",
      type: "MARKETING",
      audienceType: "ALL",
      segmentId: null,
      audienceCondition: null,
      scheduledFor: null,
      totalRecipients: 0,
      sentCount: 0,
      projectId: context.project.id,
      sentAt: null
    })
    const missing = await secret("POST", "/campaigns", {})
    expect(missing.status).toBe(422)
    expect(missing.json.error.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      "audienceType",
      "body",
      "from",
      "name",
      "subject"
    ])
    const noSegment = await secret("POST", "/campaigns", campaignBody({ audienceType: "SEGMENT" }))
    expect(noSegment.status).toBe(400)
    expect(noSegment.json.error).toMatchObject({ code: "BAD_REQUEST", statusCode: 400 })
    expect(noSegment.json.error.errors[0]).toMatchObject({ field: "segmentId", code: "required" })
    // With other problems, the missing audience field is listed with them in the 422.
    const noSegmentNorName = await secret("POST", "/campaigns", campaignBody({ audienceType: "SEGMENT", name: "" }))
    expect(noSegmentNorName.status).toBe(422)
    expect(noSegmentNorName.json.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(["name", "segmentId"])
    const unknownSegment = await secret(
      "POST",
      "/campaigns",
      campaignBody({ audienceType: "SEGMENT", segmentId: "0190c3a4-0000-7000-8000-000000000000" })
    )
    expect(unknownSegment.json.error.errors[0]).toMatchObject({ field: "segmentId", code: "unknown_segment" })
    const noCondition = await secret("POST", "/campaigns", campaignBody({ audienceType: "FILTERED" }))
    expect(noCondition.status).toBe(400)
    expect(noCondition.json.error.errors[0]).toMatchObject({ field: "audienceCondition", code: "required" })
    const badCondition = await secret(
      "POST",
      "/campaigns",
      campaignBody({ audienceType: "FILTERED", audienceCondition: { logic: "XOR", groups: [] } })
    )
    expect(badCondition.status).toBe(422)
    expect(badCondition.json.error.errors[0].field).toMatch(/^audienceCondition/)
    const badSubject = await secret("POST", "/campaigns", campaignBody({ subject: "a\nb" }))
    expect(badSubject.json.error.errors[0]).toMatchObject({ field: "subject" })
    const unverified = await secret("POST", "/campaigns", campaignBody({ from: "x@elsewhere.test" }))
    expect(unverified.status).toBe(403)
    expect(unverified.json.error).toMatchObject({ code: "INTERNAL_SERVER_ERROR", statusCode: 403 })
    expect(unverified.json.error.message).toContain("elsewhere.test")
    expect((await secret("POST", "/campaigns", campaignBody(), context.project.publicKey)).status).toBe(401)
  })

  it("lists with status filter (400 envelope when unknown), search over name, subject and sender, sort and fallbacks", async () => {
    await create({ name: "Zeta digest", subject: "weekly" })
    await create({ name: "alpha promo", subject: "Big SALE" })
    const sale = await secret("GET", "/campaigns?search=sale")
    expect(sale.json.data.map((c: { name: string }) => c.name)).toEqual(["alpha promo"])
    const bySender = await secret("GET", "/campaigns?search=NEWS@ACME")
    expect(bySender.json.total).toBeGreaterThanOrEqual(3)
    const sorted = await secret("GET", "/campaigns?status=draft&sort=name&dir=asc&pageSize=2")
    expect(sorted.json).toMatchObject({ page: 1, pageSize: 2, totalPages: expect.any(Number) })
    expect(sorted.json.data[0].name).toBe("alpha promo")
    const unknown = await secret("GET", "/campaigns?status=RUNNING")
    expect(unknown.status).toBe(400)
    expect(unknown.json.error).toMatchObject({ code: "INVALID_STATUS", statusCode: 400, message: expect.stringContaining("RUNNING") })
    const fallback = await secret("GET", "/campaigns?sort=nope&dir=nope&page=-1")
    const created = fallback.json.data.map((c: { createdAt: string }) => c.createdAt)
    expect(created).toEqual([...created].sort().reverse())
  })

  it("replaces, duplicates and deletes; another project's id is 404", async () => {
    const campaign = await create()
    const replaced = await secret("PUT", `/campaigns/${campaign.id}`, campaignBody({ name: "Replaced", type: "TRANSACTIONAL" }))
    expect(replaced.json).toMatchObject({ name: "Replaced", type: "TRANSACTIONAL", status: "DRAFT" })
    const copy = await secret("POST", `/campaigns/${campaign.id}/duplicate`)
    expect(copy.status).toBe(201)
    expect(copy.json.data).toMatchObject({ name: "Replaced (Copy)", status: "DRAFT" })
    expect(copy.json.data.id).not.toBe(campaign.id)
    const other = await context.stack.createProject("other")
    for (
      const [method, path] of [["GET", ""], ["DELETE", ""], ["GET", "/stats"], ["POST", "/send"], ["POST", "/cancel"], [
        "POST",
        "/duplicate"
      ]] as const
    ) {
      expect((await secret(method, `/campaigns/${campaign.id}${path}`, method === "POST" ? {} : undefined, other.secretKey)).status, path)
        .toBe(404)
    }
    expect((await secret("DELETE", `/campaigns/${campaign.id}`)).json).toEqual({ success: true })
    expect((await secret("GET", `/campaigns/${campaign.id}`)).status).toBe(404)
  })

  it("sends one test mail, counting nothing", async () => {
    const campaign = await create({ audienceType: "FILTERED", audienceCondition: byTag("nobody") })
    const res = await secret("POST", `/campaigns/${campaign.id}/test`, { email: "tester@example.org" })
    expect(res.json).toEqual({ success: true, data: { email: "tester@example.org", emailId: expect.any(String) } })
    const mail = await eventually(async () => {
      const found = context.smtp.messages.find((m) => m.envelopeTo.includes("tester@example.org"))
      expect(found).toBeDefined()
      return found!
    })
    expect(mail.parsed.subject).toBe("[Test] Hello there")
    expect((await secret("GET", `/campaigns/${campaign.id}`)).json).toMatchObject({ status: "DRAFT", sentCount: 0 })
    expect((await secret("POST", `/campaigns/${campaign.id}/test`, { email: "nope" })).status).toBe(422)
  })
})

describe("sending", () => {
  it("freezes the audience, skips unsubscribed and suppressed contacts, and counts exactly", async () => {
    await contactsFor("all-", 5, (i) => ({ first: `F${i}` }))
    await secret("POST", "/contacts", { email: "all-unsub@example.org", subscribed: false, data: { tag: "all-" } })
    await secret("POST", "/contacts", { email: "all-supp@example.org", subscribed: true, data: { tag: "all-" } })
    // Suppress all-supp@ with a hard bounce of an earlier mail.
    const earlier = await secret("POST", "/v1/send", { to: "all-supp@example.org", from: "news@acme.test", subject: "x", body: "<p>x</p>" })
    const earlierEmail = await eventually(async () => {
      const email = await secret("GET", `/emails/${earlier.json.data.emails[0].email}`)
      expect(email.json.status).toBe("SENT")
      return email.json
    })
    await secret("POST", "/webhooks/generic", { id: "b-1", type: "bounced", bounceType: "hard", messageId: earlierEmail.messageId })

    const campaign = await create({ audienceType: "FILTERED", audienceCondition: byTag("all-") })
    const sent = await secret("POST", `/campaigns/${campaign.id}/send`, {})
    expect(sent.json).toEqual({
      success: true,
      data: { id: campaign.id, name: "Launch", status: "SENDING", scheduledFor: null },
      message: expect.any(String)
    })
    const done = await waitStatus(campaign.id, "SENT")
    expect(done).toMatchObject({ totalRecipients: 5, sentCount: 5, sentAt: expect.any(String) })
    const mails = mailsFor("all-").filter((mail) => mail.parsed.subject?.startsWith("Hello"))
    expect(mails.map((mail) => mail.envelopeTo[0]).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `all-${i}@example.org`))
    expect(mails.map((mail) => mail.parsed.subject).sort()).toEqual(["Hello F0", "Hello F1", "Hello F2", "Hello F3", "Hello F4"])
    // Marketing mail: RFC 8058 headers.
    expect(mails[0]!.parsed.headerLines.some((line) => line.key === "list-unsubscribe-post")).toBe(true)
    const stats = (await secret("GET", `/campaigns/${campaign.id}/stats`)).json
    expect(stats).toMatchObject({
      status: "SENT",
      resolved: true,
      queued: true,
      totalRecipients: 5,
      sent: 5,
      failed: 0,
      pending: 0,
      skipped: { unsubscribed: 1, suppressed: 1, deleted: 0 }
    })

    // Engagement counters follow the email events, once per email and kind.
    const messageId = mails[0]!.parsed.messageId!
    await secret("POST", "/webhooks/generic", [
      { id: "d-1", type: "delivered", messageId },
      { id: "d-1", type: "delivered", messageId }
    ])
    const pixel = String(mails[0]!.parsed.html).match(/src="([^"]+\.gif)"/)![1]!
    await fetch(pixel)
    await fetch(pixel)
    await eventually(async () => {
      const after = (await secret("GET", `/campaigns/${campaign.id}`)).json
      expect(after).toMatchObject({ deliveredCount: 1, openedCount: 1, clickedCount: 0, bouncedCount: 0 })
    })
    // email.sent events carry the campaign, one per mail. Each is stored by its contact's lane, on its
    // own time (the counters above waited for one contact's only): wait for all five.
    await eventually(async () => {
      const events = (await secret("GET", "/events?name=email.sent&limit=100")).json.data
      expect(events.filter((event: { data: { campaignId?: string } }) => event.data.campaignId === campaign.id)).toHaveLength(5)
    })

    // A SENT campaign cannot be sent (400, as the reference answers), edited, cancelled or deleted (409) again.
    const resend = await secret("POST", `/campaigns/${campaign.id}/send`, {})
    expect(resend.status).toBe(400)
    expect(resend.json.error).toEqual({
      code: "INVALID_CAMPAIGN_STATE",
      message: "A SENT campaign cannot be sent",
      statusCode: 400,
      requestId: resend.headers.get("x-request-id"),
      details: { status: "SENT" }
    })
    const edit = await secret("PUT", `/campaigns/${campaign.id}`, campaignBody())
    expect(edit.status).toBe(409)
    expect(edit.json.error).toMatchObject({
      code: "INVALID_CAMPAIGN_STATE",
      message: "A SENT campaign cannot be edited",
      details: { status: "SENT" }
    })
    const cancel = await secret("POST", `/campaigns/${campaign.id}/cancel`)
    expect(cancel.status).toBe(409)
    expect(cancel.json.error).toMatchObject({ code: "INVALID_CAMPAIGN_STATE", message: "A SENT campaign cannot be cancelled" })
    expect((await secret("DELETE", `/campaigns/${campaign.id}`)).status).toBe(409)
  })

  it("lists its recipients: who it would go to while a draft, then the frozen audience with each mail's status or why it was skipped", async () => {
    await contactsFor("rcpt-", 3)
    await secret("POST", "/contacts", { email: "rcpt-unsub@example.org", subscribed: false, data: { tag: "rcpt-" } })
    const campaign = await create({ audienceType: "FILTERED", audienceCondition: byTag("rcpt-") })
    const draft = await secret("GET", `/campaigns/${campaign.id}/recipients?pageSize=2`)
    expect(draft.json).toMatchObject({ frozen: false, page: 1, pageSize: 2, total: 3, totalPages: 2 })
    expect(draft.json.data).toEqual(
      [0, 1].map((i) => ({ contactId: expect.any(String), email: `rcpt-${i}@example.org`, status: null, skipped: null }))
    )
    expect((await secret("GET", `/campaigns/${campaign.id}/recipients?page=2&pageSize=2`)).json.data.map((r: { email: string }) => r.email))
      .toEqual(["rcpt-2@example.org"])
    // Past the last page: no rows, the total still told.
    expect((await secret("GET", `/campaigns/${campaign.id}/recipients?page=3&pageSize=2`)).json).toMatchObject({
      data: [],
      total: 3,
      totalPages: 2
    })

    await secret("POST", `/campaigns/${campaign.id}/send`, {})
    await waitStatus(campaign.id, "SENT")
    const sent = (await secret("GET", `/campaigns/${campaign.id}/recipients`)).json
    expect(sent).toMatchObject({ frozen: true, total: 4, totalPages: 1 })
    expect(sent.data.map((r: { email: string; status: string; skipped: string | null }) => [r.email, r.status, r.skipped])).toEqual([
      ["rcpt-0@example.org", "SENT", null],
      ["rcpt-1@example.org", "SENT", null],
      ["rcpt-2@example.org", "SENT", null],
      ["rcpt-unsub@example.org", "SKIPPED", "unsubscribed"]
    ])
    // Another project sees neither this campaign nor its recipients.
    const other = await context.stack.createProject("Other")
    expect((await secret("GET", `/campaigns/${campaign.id}/recipients`, undefined, other.secretKey)).status).toBe(404)
    expect((await secret("GET", "/campaigns/0190c3a4-0000-7000-8000-000000000000/recipients")).status).toBe(404)
  })

  it("sends to a segment's members as frozen at the start, whatever the segment does mid-send", async () => {
    await contactsFor("seg-a", 4)
    await contactsFor("seg-b", 3)
    const segment = await secret("POST", "/segments", { name: "Seg A", condition: byTag("seg-a") })
    await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "2")
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    try {
      const campaign = await create({ audienceType: "SEGMENT", segmentId: segment.json.id })
      await secret("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: null })
      await eventually(async () => expect((await secret("GET", `/campaigns/${campaign.id}/stats`)).json.resolved).toBe(true))
      // Mid-send: the segment now means other contacts, and cannot be deleted while the campaign runs.
      await secret("PATCH", `/segments/${segment.json.id}`, { condition: byTag("seg-b") })
      const deleting = await secret("DELETE", `/segments/${segment.json.id}`)
      expect(deleting.status).toBe(409)
      expect(deleting.json.error.message).toContain("Launch")
      await waitStatus(campaign.id, "SENT", 20_000)
      expect(mailsFor("seg-a").map((mail) => mail.envelopeTo[0]).sort()).toEqual([0, 1, 2, 3].map((i) => `seg-a${i}@example.org`))
      expect(mailsFor("seg-b")).toHaveLength(0)
      expect((await secret("DELETE", `/segments/${segment.json.id}`)).status).toBe(204)
    } finally {
      await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "0")
    }
  }, 40_000)

  it("cancels mid-send: mail not yet handed to SMTP is not sent", async () => {
    await contactsFor("cancel-", 12)
    await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "2")
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    try {
      const campaign = await create({ audienceType: "FILTERED", audienceCondition: byTag("cancel-") })
      await secret("POST", `/campaigns/${campaign.id}/send`, {})
      await eventually(async () => expect(mailsFor("cancel-").length).toBeGreaterThanOrEqual(2), 10_000)
      const cancelled = await secret("POST", `/campaigns/${campaign.id}/cancel`)
      expect(cancelled.json.data.status).toBe("CANCELLED")
      const atCancel = mailsFor("cancel-").length
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      // At most the one round already handed to SMTP (a token or two at 2/s) arrives after the cancel.
      expect(mailsFor("cancel-").length).toBeLessThanOrEqual(atCancel + 1)
      expect(mailsFor("cancel-").length).toBeLessThan(12)
      const stats = (await secret("GET", `/campaigns/${campaign.id}/stats`)).json
      expect(stats).toMatchObject({ status: "CANCELLED", pending: 0 })
      expect(stats.sent + stats.failed).toBe(12)
      expect(stats.sent).toBe(mailsFor("cancel-").length)
      // Only drafts are deleted: what was sent keeps its record.
      expect((await secret("DELETE", `/campaigns/${campaign.id}`)).status).toBe(409)
    } finally {
      await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "0")
    }
  }, 40_000)

  it("schedules: an unparseable date is a 400, a past one sends now, a future one waits", async () => {
    await contactsFor("sched-", 1)
    const campaign = await create({ audienceType: "FILTERED", audienceCondition: byTag("sched-") })
    const bad = await secret("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: "next tuesday-ish" })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatchObject({ code: "INVALID_DATE", statusCode: 400, message: expect.stringContaining("next tuesday-ish") })
    expect((await secret("POST", "/campaigns/not-a-uuid/send", {})).status).toBe(422)
    const future = new Date(Date.now() + 3_600_000)
    const scheduled = await secret("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: future.toUTCString() })
    expect(scheduled.json.data).toMatchObject({ status: "SCHEDULED", scheduledFor: new Date(future.toUTCString()).toISOString() })
    expect(scheduled.json.message).toContain("scheduled")
    expect(
      (await secret(
        "PUT",
        `/campaigns/${campaign.id}`,
        campaignBody({ audienceType: "FILTERED", audienceCondition: byTag("sched-"), name: "Rescheduled" })
      )).status
    ).toBe(200)
    const now = await secret("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: "2001-01-01" })
    expect(now.json.data.status).toBe("SENDING")
    await waitStatus(campaign.id, "SENT")
  })
})
