/**
 * Mail as the reference platform sends it, where its own tests say so (issue #34, items 1–7): marketing
 * content never reaches a contact who opted out, bulk-mail headers, a text/plain alternative, transient
 * bounces, a sender's own List-Unsubscribe, a deleted contact's unsubscribe link, and the opt-outs a
 * campaign drew. Black-box: HTTP in, SMTP (the in-process sink, parsed by mailparser) out. Each test
 * names the reference test it mirrors (useplunk/plunk, apps/api/src/**\/__tests__).
 */
import { describe, expect, it } from "vitest"
import { emailStatus, type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import type { ReceivedMail } from "../support/smtp.ts"
import { request } from "../support/stack.ts"
import { buildWorkflow, settled } from "../workflows/support.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })
const send = (body: Record<string, unknown>) => secret("POST", "/v1/send", { from: "hello@acme.test", ...body })

const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))
const mailOf = (emailId: string) =>
  eventually(async () => {
    const found = context.smtp.messages.find((mail) => mail.parsed.messageId?.startsWith(`<${emailId}@`))
    expect(found).toBeDefined()
    return found!
  })
/** Every value of a header, as received (its lines unfolded). */
const headerValues = (mail: ReceivedMail, name: string) =>
  mail.parsed.headerLines.filter((line) => line.key === name.toLowerCase()).map((line) =>
    line.line.slice(line.line.indexOf(":") + 1).replace(/\r?\n\s+/g, " ").trim()
  )
const header = (mail: ReceivedMail, name: string) => headerValues(mail, name)[0]
const unsubscribeUrlOf = (mail: ReceivedMail) => header(mail, "List-Unsubscribe")!.match(/<([^>]+)>/)![1]!
const oneClick = (url: string) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" })

const template = async (type: string, body = "<p>Our spring offers, {{ email }}</p>") => {
  const created = await secret("POST", "/templates", {
    name: `${type} ${Math.random()}`,
    subject: "Offers",
    body,
    from: "news@acme.test",
    type
  })
  expect(created.status, JSON.stringify(created.json)).toBe(201)
  return created.json.id as string
}
const contact = async (email: string, subscribed: boolean, data: Record<string, unknown> = {}) => {
  const created = await secret("POST", "/contacts", { email, subscribed, data })
  expect(created.status, JSON.stringify(created.json)).toBe(201)
  return created.json.id as string
}
const subscribedOf = async (contactId: string) => (await secret("GET", `/contacts/${contactId}`)).json.subscribed as boolean

const byTag = (tag: string) => ({ logic: "AND", groups: [{ filters: [{ field: "data.tag", operator: "equals", value: tag }] }] })
const CAMPAIGN_CONTENT = {
  subject: "Spring news",
  body: '<p>News for {{ email }}</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
  from: "news@acme.test"
}
/** A DRAFT campaign to the contacts tagged `tag`; its id. */
const createCampaign = async (tag: string, overrides: Record<string, unknown> = {}) => {
  const body = { name: `Campaign ${tag}`, ...CAMPAIGN_CONTENT, audienceType: "FILTERED", audienceCondition: byTag(tag), ...overrides }
  const created = await secret("POST", "/campaigns", body)
  expect(created.status, JSON.stringify(created.json)).toBe(201)
  return created.json.data.id as string
}
/** A campaign to the contacts tagged `tag`, sent and waited for until SENT. */
const sendCampaign = async (tag: string, overrides: Record<string, unknown> = {}) => {
  const id = await createCampaign(tag, overrides)
  expect((await secret("POST", `/campaigns/${id}/send`, {})).status).toBe(200)
  await eventually(async () => expect((await secret("GET", `/campaigns/${id}`)).json.status).toBe("SENT"), 20_000)
  return id
}
const campaignMailTo = (address: string, campaignName: string) =>
  eventually(async () => {
    const found = mailsTo(address).filter((mail) => mail.parsed.subject === "Spring news")
    expect(found, campaignName).toHaveLength(1)
    return found[0]!
  })

/** Waits until the sender tried the email once and put it back in the queue (its SMTP recipient failed with a 4xx). */
const backInQueue = (emailId: string) =>
  eventually(async () => {
    const email = (await secret("GET", `/emails/${emailId}`)).json
    expect(email).toMatchObject({ status: "PENDING", attempts: 1 })
  })

describe("marketing content and opted-out contacts (item 1)", () => {
  // Mirrors EmailService.test.ts › "should REJECT sending MARKETING template via transactional API to unsubscribed
  // contact" and "should ALLOW transactional emails to unsubscribed contacts".
  it("/v1/send refuses a MARKETING template when a recipient is unsubscribed: 400, the whole request, each one named", async () => {
    const marketing = await template("MARKETING")
    await contact("optedout@example.org", false)
    await contact("fan@example.org", true)

    const refused = await send({ to: ["fan@example.org", "optedout@example.org", "newcomer@example.org"], template: marketing })
    expect(refused.status, JSON.stringify(refused.json)).toBe(400)
    expect(refused.json).toMatchObject({ success: false, error: { code: "CONTACT_UNSUBSCRIBED", statusCode: 400 } })
    expect(refused.json.error.errors).toEqual([
      { field: "to[1]", message: expect.stringContaining("optedout@example.org"), code: "unsubscribed", received: "optedout@example.org" },
      // A new contact through /v1/send starts unsubscribed: it is refused too.
      { field: "to[2]", message: expect.stringContaining("newcomer@example.org"), code: "unsubscribed", received: "newcomer@example.org" }
    ])
    // Nothing of it was stored: no mail for the subscribed recipient either, no new contact.
    const single = await send({ to: "optedout@example.org", template: marketing })
    expect(single.status).toBe(400)
    expect(single.json.error.errors[0].field).toBe("to")
    const contacts = (await secret("GET", "/contacts?limit=100")).json.data.map((c: { email: string }) => c.email)
    expect(contacts).not.toContain("newcomer@example.org")

    // The request's own opt-in counts (the contact is subscribed before the check), so does a TRANSACTIONAL
    // template, a HEADLESS one, or no template at all.
    const optedIn = await send({ to: "newcomer@example.org", template: marketing, subscribed: true })
    expect(optedIn.status, JSON.stringify(optedIn.json)).toBe(200)
    for (
      const body of [{ template: await template("TRANSACTIONAL") }, { template: await template("HEADLESS") }, {
        subject: "Receipt",
        body: "<p>Paid</p>"
      }]
    ) {
      const sent = await send({ to: "optedout@example.org", ...body })
      expect(sent.status, JSON.stringify(sent.json)).toBe(200)
      await emailStatus(context, sent.json.data.emails[0].email, "SENT")
    }
    await emailStatus(context, optedIn.json.data.emails[0].email, "SENT")
    expect(mailsTo("fan@example.org")).toHaveLength(0)
    expect(mailsTo("optedout@example.org")).toHaveLength(3)
  })

  // Mirrors email-processor.test.ts › "should suppress a queued marketing template sent through the transactional API"
  // and "should submit queued transactional email after the contact unsubscribes".
  it("the sender holds back a queued MARKETING-template mail from a contact who unsubscribed since (SUPPRESSED); transactional mail still goes", async () => {
    const marketing = await template("MARKETING")
    const offerContact = await contact("late-offer@example.org", true)
    const receiptContact = await contact("late-receipt@example.org", true)
    // Each recipient's first delivery attempt fails (451): the mail waits in the queue for its retry, 2 s later.
    context.smtp.failures.set("late-offer@example.org", { code: 451, times: 1 })
    context.smtp.failures.set("late-receipt@example.org", { code: 451, times: 1 })
    const offer = await send({ to: "late-offer@example.org", template: marketing })
    const receipt = await send({ to: "late-receipt@example.org", subject: "Receipt", body: "<p>Paid</p>" })
    expect([offer.status, receipt.status]).toEqual([200, 200])
    const offerId = offer.json.data.emails[0].email
    const receiptId = receipt.json.data.emails[0].email
    await backInQueue(offerId)
    await backInQueue(receiptId)
    for (const id of [offerContact, receiptContact])
      expect((await secret("PATCH", `/contacts/${id}`, { subscribed: false })).status).toBe(200)

    expect((await emailStatus(context, offerId, "SUPPRESSED")).error).toMatch(/unsubscribed/)
    await emailStatus(context, receiptId, "SENT")
    expect(mailsTo("late-offer@example.org")).toHaveLength(0)
    expect(mailsTo("late-receipt@example.org")).toHaveLength(1)
  })

  // Mirrors email-processor.test.ts › "should suppress queued marketing email when the contact unsubscribes before SES
  // submission": a campaign's frozen audience does not outrank a later opt-out.
  it("a contact who unsubscribes after a campaign froze its audience does not get the campaign", async () => {
    const staying = await contact("frozen-stay@example.org", true, { tag: "frozen" })
    const leaving = await contact("frozen-leave@example.org", true, { tag: "frozen" })
    context.smtp.failures.set("frozen-leave@example.org", { code: 451, times: 1 })
    const campaignId = await createCampaign("frozen")
    await secret("POST", `/campaigns/${campaignId}/send`, {})
    const leavingEmail = await eventually(async () => {
      const rows = await context.stack.query<{ id: string; status: string; attempts: number }>(
        "SELECT id, status, attempts FROM emails WHERE campaign_id = $1 AND contact_id = $2",
        [campaignId, leaving]
      )
      expect(rows[0]).toMatchObject({ status: "PENDING", attempts: 1 })
      return rows[0]!.id
    })
    await secret("PATCH", `/contacts/${leaving}`, { subscribed: false })
    expect((await emailStatus(context, leavingEmail, "SUPPRESSED")).error).toMatch(/unsubscribed/)
    await eventually(async () => expect((await secret("GET", `/campaigns/${campaignId}`)).json.status).toBe("SENT"))
    const stats = (await secret("GET", `/campaigns/${campaignId}/stats`)).json
    expect(stats).toMatchObject({ totalRecipients: 1, sent: 1, skipped: { unsubscribed: 1, suppressed: 0 } })
    expect(mailsTo("frozen-leave@example.org")).toHaveLength(0)
    expect(await subscribedOf(staying)).toBe(true)
    expect(mailsTo("frozen-stay@example.org")).toHaveLength(1)
  })
})

describe("bulk-mail headers (item 2)", () => {
  const BULK = { precedence: "bulk", "auto-submitted": "auto-generated", "x-auto-response-suppress": "OOF, AutoReply" }
  const bulkOf = (mail: ReceivedMail) => Object.fromEntries(Object.keys(BULK).map((name) => [name, header(mail, name)]))

  // Mirrors EmailHeaderService.test.ts › "gives a marketing campaign the full set (unsubscribe + suppression)", "adds the
  // bulk suppression headers to a transactional campaign, but no List-Unsubscribe", "still gets the full set — marketing
  // mail is bulk regardless of campaign membership" and "adds no headers for a transactional 1:1 send".
  it("campaign mail (marketing or transactional) and marketing workflow mail are marked bulk; /v1/send mail is not", async () => {
    await contact("bulk-m@example.org", true, { tag: "bulk-m" })
    await contact("bulk-t@example.org", true, { tag: "bulk-t" })
    await sendCampaign("bulk-m")
    await sendCampaign("bulk-t", { type: "TRANSACTIONAL", body: "<p>Our terms change on May 1st</p>" })
    const marketingCampaign = await campaignMailTo("bulk-m@example.org", "marketing campaign")
    expect(bulkOf(marketingCampaign)).toEqual(BULK)
    expect(header(marketingCampaign, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click")
    const transactionalCampaign = await campaignMailTo("bulk-t@example.org", "transactional campaign")
    expect(bulkOf(transactionalCampaign)).toEqual(BULK)
    expect(header(transactionalCampaign, "List-Unsubscribe")).toBeUndefined()

    const templateId = await template("MARKETING", "<p>Welcome aboard</p>")
    const { workflowId } = await buildWorkflow({ url: context.api.url, key: context.project.secretKey }, {
      name: "Bulk welcome",
      eventName: "bulk_signed_up",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId } } }
    })
    const tracked = await request(context.api.url, "POST", "/v1/track", {
      key: context.project.publicKey,
      body: { email: "bulk-w@example.org", event: "bulk_signed_up", subscribed: true }
    })
    expect(tracked.status).toBe(200)
    await settled({ url: context.api.url, key: context.project.secretKey }, workflowId, "COMPLETED")
    const workflowMail = await eventually(async () => {
      const [found] = mailsTo("bulk-w@example.org")
      expect(found).toBeDefined()
      return found!
    })
    expect(bulkOf(workflowMail)).toEqual(BULK)
    expect(header(workflowMail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click")

    const direct = await send({ to: "bulk-direct@example.org", subject: "Your code", body: "<p>123456</p>" })
    const directMail = await mailOf(direct.json.data.emails[0].email)
    expect(bulkOf(directMail)).toEqual({ precedence: undefined, "auto-submitted": undefined, "x-auto-response-suppress": undefined })
    expect(header(directMail, "List-Unsubscribe")).toBeUndefined()
  })
})

describe("the text/plain alternative (item 3)", () => {
  // Mirrors EmailService.test.ts › "SES plain-text alternative" (text part derived from the HTML, placed before it,
  // link targets kept, none when the HTML has no readable content) and mime.test.ts › htmlToPlainText (links once,
  // blocks separated, layout tables flattened, images dropped, headings not upper-cased).
  it("every message carries a text part made from its HTML, before the HTML; none when the HTML has no text", async () => {
    const html = "<h1>Your invoice is ready</h1>" +
      '<p>First paragraph</p><p>Please <a href="https://shop.example.org/reset">reset your password</a>.</p>' +
      "<table><tr><td>Hello</td></tr><tr><td>World</td></tr></table>" +
      '<p><a href="https://shop.example.org">https://shop.example.org</a></p>' +
      '<img src="https://cdn.example.org/banner.png" alt="Banner">'
    const sent = await send({ to: "text@example.org", subject: "Invoice", body: html })
    const mail = await mailOf(sent.json.data.emails[0].email)
    const text = mail.parsed.text!
    // Links keep their targets: here the tracked redirects the HTML carries, one to one.
    const htmlLinks = [...String(mail.parsed.html).matchAll(/href="([^"]+)"/g)].map((match) => match[1]!.replace(/&amp;/g, "&"))
    expect(htmlLinks).toHaveLength(2)
    expect(htmlLinks[0]).toMatch(/\/t\/c\//)
    expect(text).toContain(`reset your password [${htmlLinks[0]}]`)
    expect(text).toContain(htmlLinks[1])
    expect(text).toMatch(/^Your invoice is ready\n\nFirst paragraph\n\nPlease reset/)
    expect(text).toMatch(/Hello\n+World/)
    expect(text).not.toMatch(/[|]|Banner|banner\.png|\.gif/)
    expect(mail.raw.indexOf("Content-Type: text/plain")).toBeGreaterThan(0)
    expect(mail.raw.indexOf("Content-Type: text/plain")).toBeLessThan(mail.raw.indexOf("Content-Type: text/html"))
    // With attachments, the text part stays inside the alternative, beside the HTML.
    const attached = await send({
      to: "text@example.org",
      subject: "With a file",
      body: "<p>See the file</p>",
      attachments: [{ filename: "a.txt", content: Buffer.from("file").toString("base64") }]
    })
    const attachedMail = await mailOf(attached.json.data.emails[0].email)
    expect(attachedMail.parsed.text?.trim()).toBe("See the file")
    expect(attachedMail.raw).toMatch(/multipart\/alternative[\s\S]*text\/plain[\s\S]*text\/html[\s\S]*a\.txt/)

    const imageOnly = await send({
      to: "text@example.org",
      subject: "Picture",
      body: '<html><body><img src="https://cdn.example.org/p.png"></body></html>'
    })
    const imageMail = await mailOf(imageOnly.json.data.emails[0].email)
    expect(imageMail.raw).not.toContain("text/plain")
    expect(imageMail.raw).toContain("text/html")
    // Past 5,000 tags the conversion would hold the sender too long: the mail goes, without a text part.
    const dense = await send({ to: "text@example.org", subject: "Dense", body: "<p>Row</p>".repeat(2_600) })
    const denseMail = await mailOf(dense.json.data.emails[0].email)
    expect(denseMail.raw).not.toContain("text/plain")
    expect(denseMail.parsed.html).toContain("<p>Row</p>")
  })
})

describe("transient bounces (item 4)", () => {
  // Mirrors Webhooks.sns.test.ts › "leaves the row and the contact alone on a transient bounce" and "bounces and
  // unsubscribes the contact on a permanent bounce".
  it("a soft bounce changes nothing but its event: the email keeps its status, the campaign's bounce count stays, the contact stays", async () => {
    const soft = await contact("soft@example.org", true, { tag: "bounces" })
    const hard = await contact("hard@example.org", true, { tag: "bounces" })
    const campaignId = await sendCampaign("bounces")
    const softMail = await campaignMailTo("soft@example.org", "soft")
    const hardMail = await campaignMailTo("hard@example.org", "hard")
    const notify = (id: string, mail: ReceivedMail, bounceType: string) =>
      secret("POST", "/webhooks/generic", { id, type: "bounced", bounceType, messageId: mail.parsed.messageId })

    expect((await notify("soft-1", softMail, "soft")).json.data.applied).toBe(1)
    const bounceEvents = await eventually(async () => {
      const events = (await secret("GET", `/events/contact/${soft}`)).json
      const found = (events.data ?? events).filter((event: { name: string }) => event.name === "email.bounce")
      expect(found).toHaveLength(1)
      return found
    })
    expect(bounceEvents[0].data).toMatchObject({ bounceType: "Transient", campaignId })
    const softEmail =
      (await context.stack.query<{ id: string }>("SELECT id FROM emails WHERE campaign_id = $1 AND contact_id = $2", [campaignId, soft]))[
        0
      ]!.id
    expect((await secret("GET", `/emails/${softEmail}`)).json).toMatchObject({ status: "SENT", bouncedAt: null })
    expect(await subscribedOf(soft)).toBe(true)
    expect((await secret("GET", `/campaigns/${campaignId}`)).json.bouncedCount).toBe(0)
    expect((await secret("GET", `/campaigns/${campaignId}/stats`)).json).toMatchObject({ bounced: 0, rates: { bounce: 0 } })
    // Not suppressed: the address still gets mail.
    const later = await send({ to: "soft@example.org", subject: "Later", body: "<p>Still here</p>" })
    await emailStatus(context, later.json.data.emails[0].email, "SENT")

    expect((await notify("hard-1", hardMail, "hard")).json.data.applied).toBe(1)
    await eventually(async () => expect((await secret("GET", `/campaigns/${campaignId}`)).json.bouncedCount).toBe(1))
    expect(await subscribedOf(hard)).toBe(false)
  })
})

describe("a sender's own List-Unsubscribe on /v1/send (item 5)", () => {
  const linkingBody = '<p>Hi</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>'
  const received = async (headers: Record<string, string>) => {
    const sent = await send({ to: "byo@example.org", subject: "Yours", body: linkingBody, headers })
    expect(sent.status, JSON.stringify(sent.json)).toBe(200)
    return mailOf(sent.json.data.emails[0].email)
  }

  // Mirrors EmailHeaderService.test.ts › "caller-supplied List-Unsubscribe (bring your own list management)": "drops the
  // default one-click claim when the caller supplies only the URL", "takes the caller pair verbatim when both members
  // are supplied", "drops both defaults case-insensitively, leaving no duplicate header" and "does not leave a dangling
  // -Post when the caller supplies only that member".
  it("replaces ours; alone it drops our one-click claim, with its own -Post both are kept; a lone -Post is dropped", async () => {
    const ours = await received({})
    expect(unsubscribeUrlOf(ours)).toMatch(/\/unsubscribe\//)
    expect(header(ours, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click")

    const urlOnly = await received({ "List-Unsubscribe": "<https://acme.test/unsub?c=123>" })
    expect(headerValues(urlOnly, "List-Unsubscribe")).toEqual(["<https://acme.test/unsub?c=123>"])
    expect(header(urlOnly, "List-Unsubscribe-Post")).toBeUndefined()

    const pair = await received({
      "List-Unsubscribe": "<https://acme.test/unsub?c=123>, <mailto:unsub@acme.test>",
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"
    })
    expect(headerValues(pair, "List-Unsubscribe")).toEqual(["<https://acme.test/unsub?c=123>, <mailto:unsub@acme.test>"])
    expect(headerValues(pair, "List-Unsubscribe-Post")).toEqual(["List-Unsubscribe=One-Click"])

    const lowerCase = await received({ "list-unsubscribe": "<mailto:unsub@acme.test>" })
    expect(headerValues(lowerCase, "List-Unsubscribe")).toEqual(["<mailto:unsub@acme.test>"])
    expect(headerValues(lowerCase, "List-Unsubscribe-Post")).toEqual([])

    const postOnly = await received({ "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" })
    expect(headerValues(postOnly, "List-Unsubscribe")).toEqual([])
    expect(headerValues(postOnly, "List-Unsubscribe-Post")).toEqual([])

    // The header rules that remain: no CR/LF, at most 998 characters.
    const injected = await send({
      to: "byo@example.org",
      subject: "x",
      body: "<p>x</p>",
      headers: { "List-Unsubscribe": "<https://a.test>\r\nBcc: x@evil.test" }
    })
    expect(injected.status).toBe(422)
    expect(injected.json.error.errors[0]).toMatchObject({ field: "headers.List-Unsubscribe", code: "header_injection" })
  })
})

describe("a deleted contact's unsubscribe link (item 6)", () => {
  // Mirrors Unsubscribe.test.ts › "reports success for an unknown contact id rather than 404 or 500".
  it("answers success: nothing to unsubscribe is no error to the recipient; a forged one is still refused", async () => {
    const contactId = await contact("deleted@example.org", true)
    const sent = await send({ to: "deleted@example.org", subject: "News", body: '<p>Hi</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>' })
    const url = unsubscribeUrlOf(await mailOf(sent.json.data.emails[0].email))
    expect((await secret("DELETE", `/contacts/${contactId}`)).status).toBe(204)
    expect((await secret("GET", `/contacts/${contactId}`)).status).toBe(404)

    const posted = await oneClick(url)
    expect(posted.status).toBe(200)
    expect(await posted.text()).toContain("You are unsubscribed")
    const page = await fetch(url)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain("You are unsubscribed")
    // The signature still decides: a forged token for the same (deleted) contact, or one no mail was sent to, is refused.
    expect((await oneClick(url.replace(/\.[\w-]+(\?|$)/, ".forged$1"))).status).toBe(404)
    expect((await oneClick(url.replace(contactId, "0190c3a4-0000-7000-8000-000000000000"))).status).toBe(404)
  })
})

describe("a campaign's opt-outs (item 7)", () => {
  // Mirrors CampaignService.optOuts.test.ts › "counts a recipient who unsubscribes from the campaign", "does not count
  // an unsubscribe with no originating email", "does not count suppression from a bounced email", "does not count
  // suppression from a complaint", "does not count an unsubscribe from another campaign" and "reports the rate against
  // sent mail"; Unsubscribe.test.ts › "is idempotent — a provider retry still succeeds and fires no second event".
  it("unsubscribedCount counts unsubscribes through the campaign's links, once each, not bounces, complaints or other ways out", async () => {
    const ids = Object.fromEntries(
      await Promise.all(
        ["oneclick", "page", "patched", "bounced", "complained"].map(async (name) =>
          [name, await contact(`optout-${name}@example.org`, true, { tag: "optouts" })] as const
        )
      )
    )
    const campaignId = await sendCampaign("optouts")
    const mailOfContact = (name: string) => campaignMailTo(`optout-${name}@example.org`, name)
    const count = async () => (await secret("GET", `/campaigns/${campaignId}`)).json.unsubscribedCount

    // One-click from the List-Unsubscribe header, retried by the mailbox provider: counted once.
    const oneClickUrl = unsubscribeUrlOf(await mailOfContact("oneclick"))
    expect((await oneClick(oneClickUrl)).status).toBe(200)
    expect((await oneClick(oneClickUrl)).status).toBe(200)
    expect(await subscribedOf(ids.oneclick!)).toBe(false)
    expect(await count()).toBe(1)

    // The body's link: the page (a GET) changes nothing; its button posts the same link.
    const pageMail = await mailOfContact("page")
    const bodyLink = String(pageMail.parsed.html).match(/href="([^"]*\/unsubscribe\/[^"]+)"/)![1]!.replace(/&amp;/g, "&")
    const page = await (await fetch(bodyLink)).text()
    expect(await count()).toBe(1)
    const action = page.match(/action="([^"]+)"/)![1]!.replace(/&amp;/g, "&")
    expect((await fetch(action, { method: "POST" })).status).toBe(200)
    expect(await count()).toBe(2)

    // Unsubscribed another way (the API): not the campaign's doing.
    await secret("PATCH", `/contacts/${ids.patched}`, { subscribed: false })
    // A hard bounce and a complaint unsubscribe too, and are counted as such; a later click on the mail's link
    // (once subscribed again) is not an opt-out of this campaign's either.
    for (const [name, type] of [["bounced", "bounced"], ["complained", "complained"]] as const) {
      const mail = await mailOfContact(name)
      const notified = await secret("POST", "/webhooks/generic", {
        id: `optout-${name}`,
        type,
        messageId: mail.parsed.messageId,
        ...(type === "bounced" ? { bounceType: "hard" } : {})
      })
      expect(notified.json.data.applied).toBe(1)
      await eventually(async () => expect(await subscribedOf(ids[name]!)).toBe(false))
      await secret("PATCH", `/contacts/${ids[name]}`, { subscribed: true })
      expect((await oneClick(unsubscribeUrlOf(mail))).status).toBe(200)
      expect(await subscribedOf(ids[name]!)).toBe(false)
    }
    expect(await count()).toBe(2)

    const stats = (await secret("GET", `/campaigns/${campaignId}/stats`)).json
    expect(stats).toMatchObject({ sent: 5, bounced: 1, complained: 1, unsubscribedCount: 2, rates: { unsubscribe: 0.4 } })
    // Another campaign's count is its own.
    await contact("optout-other@example.org", true, { tag: "optouts-other" })
    const otherId = await sendCampaign("optouts-other")
    await oneClick(unsubscribeUrlOf(await campaignMailTo("optout-other@example.org", "other")))
    expect((await secret("GET", `/campaigns/${otherId}`)).json.unsubscribedCount).toBe(1)
    expect(await count()).toBe(2)
  })
})
