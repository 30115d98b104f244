import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { makeSnsSigner } from "../support/sns.ts"
import { request } from "../support/stack.ts"

// A self-signed certificate pinned as the SNS signing certificate (SNS_SIGNING_CERT_FILE).
const { certFile, signedSns } = makeSnsSigner()

const SES_TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-events"

let context: MailContext
withMailStack((ready) => (context = ready), { SNS_SIGNING_CERT_FILE: certFile, SES_TOPIC_ARNS: SES_TOPIC })

/** An SES notification (`Complaint`, `Bounce`...) about the email with this Message-ID, over SNS. */
const sesNotification = (messageId: string, overrides: Record<string, string> = {}, type = "Complaint") =>
  signedSns({
    Type: "Notification",
    MessageId: "sns-msg-1",
    TopicArn: SES_TOPIC,
    Message: JSON.stringify({
      notificationType: type,
      mail: { messageId: "ses-internal-id", commonHeaders: { messageId: `<${messageId}>` } },
      complaint: { feedbackId: "f-1" }
    }),
    ...overrides
  })

const postSes = (message: Record<string, string>, base = context.api.url) =>
  request(base, "POST", "/webhooks/ses", { rawBody: JSON.stringify(message), headers: { "content-type": "text/plain; charset=UTF-8" } })

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })

const sendTo = async (to: string, body: string, extra: Record<string, unknown> = {}) => {
  const res = await secret("POST", "/v1/send", { to, from: "hello@acme.test", subject: "News", body, ...extra })
  expect(res.status, JSON.stringify(res.json)).toBe(200)
  const emailId: string = res.json.data.emails[0].email
  const contactId: string = res.json.data.emails[0].contact.id
  const mail = await eventually(async () => {
    const found = context.smtp.messages.find((m) => m.parsed.messageId?.startsWith(`<${emailId}@`))
    expect(found).toBeDefined()
    return found!
  })
  return { emailId, contactId, mail, html: String(mail.parsed.html) }
}

const eventsOf = async (contactId: string, name: string) => {
  const res = await secret("GET", `/events/contact/${contactId}`)
  return (res.json.data ?? res.json).filter((event: { name: string }) => event.name === name)
}

const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"))

describe("open and click tracking", () => {
  it("records opens through the pixel and redirects signed clicks where the mail pointed", async () => {
    const openers = await secret("POST", "/segments", {
      name: "Openers",
      condition: { logic: "AND", groups: [{ filters: [{ field: "email.opened", operator: "triggered" }] }] }
    })
    expect(openers.status).toBe(201)
    const { emailId, contactId, html } = await sendTo("reader@example.org", '<a href="https://shop.example.org/item?id=7&amp;x=1">Item</a>')
    await emailStatus(context, emailId, "SENT")
    const pixel = html.match(/src="([^"]+\.gif)"/)![1]!
    const opened = await fetch(pixel)
    expect(opened.headers.get("content-type")).toBe("image/gif")
    await emailStatus(context, emailId, "OPENED")
    // email.open is the contact's event, so segments on engagement follow it.
    await eventually(async () => {
      const members = await secret("GET", `/segments/${openers.json.id}/contacts`)
      expect(members.json.data.map((c: { id: string }) => c.id)).toEqual([contactId])
    })

    const click = hrefs(html).find((href) => href.includes("/t/c/"))!
    const first = await fetch(click, { redirect: "manual" })
    expect(first.status).toBe(302)
    expect(first.headers.get("location")).toBe("https://shop.example.org/item?id=7&x=1")
    await fetch(click, { redirect: "manual" })
    const record = await emailStatus(context, emailId, "CLICKED")
    expect(record.openedAt).toEqual(expect.any(String))
    const clicks = await eventually(async () => {
      const found = await eventsOf(contactId, "email.click")
      expect(found).toHaveLength(2)
      return found
    })
    expect(clicks.map((event: { data: { isFirstClick: boolean } }) => event.data.isFirstClick).sort()).toEqual([false, true])
    expect(clicks[0].data).toMatchObject({ emailId, link: "https://shop.example.org/item?id=7&x=1", subject: "News" })
    await eventually(async () => expect(await eventsOf(contactId, "email.open")).toHaveLength(1))
    // An open after a click does not move the status back.
    await fetch(pixel)
    expect((await emailStatus(context, emailId, "CLICKED")).status).toBe("CLICKED")
  })

  it("collapses repeated opens of one email, across api processes: one email.open per hour", async () => {
    const { emailId, contactId, html } = await sendTo("prefetch@example.org", '<a href="https://shop.example.org/">Shop</a>')
    const pixel = new URL(html.match(/src="([^"]+\.gif)"/)![1]!)
    const click = hrefs(html).find((href) => href.includes("/t/c/"))!
    const second = await context.stack.start("api", { PORT: "0" })
    const fetchPixel = async (index: number) => {
      // Alternate processes, as a load balancer would.
      const base = index % 2 === 0 ? context.api.url : second.url
      const response = await fetch(`${base}${pixel.pathname}`)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("image/gif")
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0)
    }
    // 25 fetches at once (a proxy prefetching, a reader re-reading), every one answered with the gif.
    await Promise.all(Array.from({ length: 25 }, (_, index) => fetchPixel(index)))
    // A click behind them: once it is recorded, the opens before it are too.
    await fetch(click, { redirect: "manual" })
    await eventually(async () => expect(await eventsOf(contactId, "email.click")).toHaveLength(1))
    expect(await eventsOf(contactId, "email.open")).toHaveLength(1)

    // An hour after the recorded open, a fetch records the next one (and only one).
    await context.stack.query("UPDATE emails SET open_recorded_at = now() - interval '61 minutes' WHERE id = $1", [emailId])
    await Promise.all(Array.from({ length: 5 }, (_, index) => fetchPixel(index)))
    await second.stop()
    await fetch(click, { redirect: "manual" })
    await eventually(async () => expect(await eventsOf(contactId, "email.click")).toHaveLength(2))
    expect(await eventsOf(contactId, "email.open")).toHaveLength(2)
  })

  it("refuses a tampered click URL and records nothing", async () => {
    const { emailId, contactId, html } = await sendTo("tamper@example.org", '<a href="https://good.example.org/">Go</a>')
    const click = new URL(hrefs(html).find((href) => href.includes("/t/c/"))!)
    click.searchParams.set("u", "https://evil.example.org/")
    const res = await fetch(click, { redirect: "manual" })
    expect(res.status).toBe(404)
    expect(res.headers.get("location")).toBeNull()
    const forged = await fetch(click.toString().replace(/\/t\/c\/[^/]+\//, `/t/c/${emailId}/AAAA`), { redirect: "manual" })
    expect(forged.status).toBe(404)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(await eventsOf(contactId, "email.click")).toHaveLength(0)
  })

  it("adds nothing when the project turned tracking off", async () => {
    await context.stack.cli("project", "settings", "--id", context.project.id, "--tracking", "off")
    // Settings are cached for up to 5 s per process.
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    const { html } = await sendTo("untracked@example.org", '<a href="https://plain.example.org/">Go</a>')
    expect(html).toContain('href="https://plain.example.org/"')
    expect(html).not.toContain("/t/o/")
    await context.stack.cli("project", "settings", "--id", context.project.id, "--tracking", "on")
  })
})

describe("subscription pages", () => {
  it("unsubscribes with RFC 8058 one-click; a GET only asks; manage and subscribe work", async () => {
    await secret("POST", "/contacts", { email: "oneclick@example.org", subscribed: true })
    const { contactId, mail } = await sendTo("oneclick@example.org", '<p>Hi</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>')
    const header = mail.parsed.headerLines.find((line) => line.key === "list-unsubscribe")!.line
    const url = header.match(/<([^>]+)>/)![1]!

    const page = await fetch(url)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<form method="post"')
    expect((await secret("GET", `/contacts/${contactId}`)).json.subscribed).toBe(true)

    const oneClick = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click"
    })
    expect(oneClick.status).toBe(200)
    expect((await secret("GET", `/contacts/${contactId}`)).json.subscribed).toBe(false)
    await eventually(async () => expect(await eventsOf(contactId, "contact.unsubscribed")).toHaveLength(1))

    const manage = await fetch(url.replace("/unsubscribe/", "/manage/"))
    expect(await manage.text()).toContain("is currently unsubscribed")
    const resubscribe = await fetch(url.replace("/unsubscribe/", "/subscribe/"), { method: "POST" })
    expect(resubscribe.status).toBe(200)
    expect((await secret("GET", `/contacts/${contactId}`)).json.subscribed).toBe(true)

    // The token's signature, before the `?e=` naming the email the link came in.
    const forged = await fetch(url.replace(/\.[\w-]+(\?|$)/, ".forged$1"), { method: "POST" })
    expect(forged.status).toBe(404)
  })
})

describe("delivery notifications", () => {
  it("applies the generic format once; hard bounces suppress and unsubscribe the address", async () => {
    const delivered = await sendTo("bounce@example.org", "<p>One</p>", { subscribed: true })
    const { json: email } = await secret("GET", `/emails/${delivered.emailId}`)
    const notify = (body: unknown) => secret("POST", "/webhooks/generic", body)

    const first = await notify({ id: "n-1", type: "delivered", messageId: `<${email.messageId}>` })
    expect(first.json.data).toEqual({ applied: 1, duplicates: 0, unknown: 0 })
    const again = await notify({ id: "n-1", type: "delivered", messageId: email.messageId })
    expect(again.json.data).toEqual({ applied: 0, duplicates: 1, unknown: 0 })
    await emailStatus(context, delivered.emailId, "DELIVERED")

    const bounced = await notify([{ id: "n-2", type: "bounced", bounceType: "hard", messageId: email.messageId }])
    expect(bounced.json.data.applied).toBe(1)
    await emailStatus(context, delivered.emailId, "BOUNCED")
    expect((await secret("GET", `/contacts/${delivered.contactId}`)).json.subscribed).toBe(false)
    const bounces = await eventually(async () => {
      const found = await eventsOf(delivered.contactId, "email.bounce")
      expect(found).toHaveLength(1)
      return found
    })
    expect(bounces[0].data).toMatchObject({ emailId: delivered.emailId, bounceType: "Permanent" })

    // Suppressed: even transactional mail is no longer sent to it.
    const before = context.smtp.messages.length
    const res = await secret("POST", "/v1/send", { to: "bounce@example.org", from: "hello@acme.test", subject: "Two", body: "<p>2</p>" })
    const second = await emailStatus(context, res.json.data.emails[0].email, "SUPPRESSED")
    expect(second.error).toMatch(/suppressed/)
    expect(context.smtp.messages.length).toBe(before)

    // Another project's key cannot touch this project's mail.
    const other = await context.stack.createProject("other")
    const foreign = await request(context.api.url, "POST", "/webhooks/generic", {
      key: other.secretKey,
      body: { id: "n-3", type: "complained", messageId: email.messageId }
    })
    expect(foreign.json.data).toEqual({ applied: 0, duplicates: 0, unknown: 1 })
    expect((await notify({ id: "x", type: "exploded", messageId: "y" })).status).toBe(422)
  })

  it("verifies SES notifications over SNS and applies complaints", async () => {
    const sent = await sendTo("ses@example.org", "<p>Hi</p>", { subscribed: true })
    const { json: email } = await secret("GET", `/emails/${sent.emailId}`)

    const forged = sesNotification(email.messageId)
    forged.Message = forged.Message!.replace("Complaint", "Delivery")
    expect((await postSes(forged)).status).toBe(403)
    expect((await postSes(sesNotification(email.messageId, { SigningCertURL: "https://evil.example.org/cert.pem" }))).status).toBe(403)

    const ok = await postSes(sesNotification(email.messageId))
    expect(ok.status).toBe(200)
    expect(ok.json.data.outcome).toBe("applied")
    expect((await postSes(sesNotification(email.messageId))).json.data.outcome).toBe("duplicate")
    await emailStatus(context, sent.emailId, "COMPLAINED")
    expect((await secret("GET", `/contacts/${sent.contactId}`)).json.subscribed).toBe(false)
    await eventually(async () => expect(await eventsOf(sent.contactId, "email.complaint")).toHaveLength(1))
  })

  it("accepts SES only from the topics SES_TOPIC_ARNS names: none when unset, any with *", async () => {
    const sent = await sendTo("topics@example.org", "<p>Hi</p>", { subscribed: true })
    const { json: email } = await secret("GET", `/emails/${sent.emailId}`)
    const strangerTopic = "arn:aws:sns:us-east-1:999999999999:not-ours"
    const confirmation = (topic: string) =>
      signedSns({
        Type: "SubscriptionConfirmation",
        MessageId: "sns-sub-1",
        Token: "token-1",
        TopicArn: topic,
        Message: "You have chosen to subscribe to the topic.",
        SubscribeURL: `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${topic}&Token=token-1`
      })
    const expectRefused = (response: Awaited<ReturnType<typeof postSes>>) => {
      expect(response.status).toBe(403)
      expect(response.json).toMatchObject({ success: false, error: { code: "TOPIC_NOT_ACCEPTED", statusCode: 403 } })
    }

    // Configured: another topic is refused, validly signed or not, and its subscription not confirmed.
    expectRefused(await postSes(sesNotification(email.messageId, { TopicArn: strangerTopic, MessageId: "stranger-1" })))
    expectRefused(await postSes(confirmation(strangerTopic)))

    // Unset: nothing is accepted, not even the topic the other process accepts.
    const unset = await context.stack.start("api", { SES_TOPIC_ARNS: "", PORT: "0" })
    const refused = await postSes(sesNotification(email.messageId, { MessageId: "unset-1" }), unset.url)
    expectRefused(refused)
    expect(refused.json.error.message).toContain("SES_TOPIC_ARNS")
    expectRefused(await postSes(confirmation(SES_TOPIC), unset.url))
    await unset.stop()
    expect((await secret("GET", `/emails/${sent.emailId}`)).json.status).not.toBe("COMPLAINED")
    expect((await secret("GET", `/contacts/${sent.contactId}`)).json.subscribed).toBe(true)

    // `*`: any topic, the signature still checked.
    const any = await context.stack.start("api", { SES_TOPIC_ARNS: "*", PORT: "0" })
    const forged = sesNotification(email.messageId, { TopicArn: strangerTopic, MessageId: "any-1" })
    forged.TopicArn = "arn:aws:sns:us-east-1:999999999999:tampered"
    expect((await postSes(forged, any.url)).status).toBe(403)
    const accepted = await postSes(sesNotification(email.messageId, { TopicArn: strangerTopic, MessageId: "any-1" }), any.url)
    await any.stop()
    expect(accepted.json.data.outcome).toBe("applied")
    await emailStatus(context, sent.emailId, "COMPLAINED")
  })

  it("an SES complaint acts only in the project of the email it names", async () => {
    const other = await context.stack.createProject("same address elsewhere")
    const theirs = await request(context.api.url, "POST", "/contacts", {
      key: other.secretKey,
      body: { email: "shared@example.org", subscribed: true }
    })
    expect(theirs.status).toBeLessThan(300)
    const sent = await sendTo("shared@example.org", "<p>Hi</p>", { subscribed: true })
    const { json: email } = await secret("GET", `/emails/${sent.emailId}`)
    expect((await postSes(sesNotification(email.messageId, { MessageId: "scoped-1" }))).json.data.outcome).toBe("applied")
    await emailStatus(context, sent.emailId, "COMPLAINED")
    expect((await secret("GET", `/contacts/${sent.contactId}`)).json.subscribed).toBe(false)
    const suppressed = await context.stack.query<{ project_id: string }>(
      "SELECT project_id FROM suppressions WHERE email = 'shared@example.org'"
    )
    expect(suppressed.map((row) => row.project_id)).toEqual([context.project.id])
    const untouched = await request(context.api.url, "GET", `/contacts/${theirs.json.id}`, { key: other.secretKey })
    expect(untouched.json.subscribed).toBe(true)
  })
})
