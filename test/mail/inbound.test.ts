/**
 * Inbound mail through real SMTP over loopback (nodemailer as the sending client) and SES receipt
 * notifications through the SNS webhook: each received message becomes an email.received event on its
 * sender's contact (created unsubscribed), an inbound row on GET /emails, linked to the email it answers,
 * counted in the inbound billing category, and triggers workflows.
 */
import { generateKeyPairSync } from "node:crypto"
import { Effect } from "effect"
import nodemailer from "nodemailer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Billing } from "../../src/store/Billing.ts"
import { createMailStack, freePort, type MailContext, type MailStack, verifyDomain } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { withSql } from "../support/pg.ts"
import { makeSnsSigner } from "../support/sns.ts"
import { request } from "../support/stack.ts"
import { buildWorkflow, settled } from "../workflows/support.ts"

const { certFile, signedSns } = makeSnsSigner()
const SES_TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-inbound"

const inboundPort = await freePort()
const MAX_BYTES = 64 * 1024

let context: MailContext
let mail: MailStack | undefined
// `all`, so its api process runs the receiver as a deployment's would; a longer start than withMailStack allows (a loaded machine).
beforeAll(async () => {
  mail = await createMailStack({
    INBOUND_SMTP_PORT: String(inboundPort),
    INBOUND_MAX_BYTES: String(MAX_BYTES),
    SNS_SIGNING_CERT_FILE: certFile,
    SES_TOPIC_ARNS: SES_TOPIC
  })
  const api = await mail.stack.start("all")
  expect(api.logs.join("\n")).toContain(`Inbound SMTP listening on port ${inboundPort}`)
  const project = await mail.stack.createProject()
  await verifyDomain({ api, dns: mail.dns }, project.secretKey, "acme.test")
  context = { stack: mail.stack, api, project, dns: mail.dns, smtp: mail.smtp }
}, 240_000)
afterAll(async () => {
  await mail?.stop()
})

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })

const transport = () =>
  nodemailer.createTransport({ host: "127.0.0.1", port: inboundPort, secure: false, ignoreTLS: true, name: "client.sender.test" })

const contactByEmail = async (email: string) => {
  const found = await secret("GET", `/contacts?search=${encodeURIComponent(email)}`)
  return (found.json.data as Array<{ id: string; email: string; subscribed: boolean }>).find((contact) => contact.email === email)
}

const receivedEvents = async (contactId: string) => {
  const res = await secret("GET", `/events/contact/${contactId}`)
  return ((res.json.data ?? res.json) as Array<{ name: string; data: Record<string, any> }>).filter((event) =>
    event.name === "email.received"
  )
}

const inboundEmails = async () => (await secret("GET", "/emails?direction=inbound")).json.data as Array<Record<string, any>>

describe("inbound SMTP", () => {
  it("turns mail to a verified domain into email.received on a new, unsubscribed contact, and triggers a workflow", async () => {
    const client = { url: context.api.url, key: context.project.secretKey }
    const { workflowId } = await buildWorkflow(client, {
      name: "answer inbound",
      eventName: "email.received",
      first: "done",
      steps: { done: { type: "EXIT", config: { reason: "seen" } } }
    })
    const info = await transport().sendMail({
      from: "Ada Writer <ada@writer.test>",
      to: "support@acme.test",
      subject: "Help with my order",
      text: "Where is my parcel?",
      messageId: "<first-message@writer.test>"
    })
    expect(info.accepted).toEqual(["support@acme.test"])

    const contact = await eventually(async () => {
      const found = await contactByEmail("ada@writer.test")
      expect(found).toBeDefined()
      return found!
    })
    expect(contact.subscribed).toBe(false)
    const [event] = await eventually(async () => {
      const events = await receivedEvents(contact.id)
      expect(events).toHaveLength(1)
      return events
    })
    expect(event!.data).toMatchObject({
      subject: "Help with my order",
      from: "ada@writer.test",
      to: ["support@acme.test"],
      messageId: "first-message@writer.test",
      authentication: { spf: expect.any(String), dkim: "none", dmarc: expect.any(String) }
    })
    await settled(client, workflowId, "EXITED")

    const [email] = (await inboundEmails()).filter((row) => row.id === event!.data.emailId)
    expect(email).toMatchObject({
      direction: "inbound",
      status: "RECEIVED",
      from: "ada@writer.test",
      to: "support@acme.test",
      subject: "Help with my order"
    })
    const detail = await secret("GET", `/emails/${email!.id}`)
    expect(detail.json.timeline.map((step: { step: string }) => step.step)).toEqual(["RECEIVED"])
    expect(detail.json.text).toContain("Where is my parcel?")
    expect(detail.json.headers).toContainEqual({ name: "Subject", value: "Help with my order" })
    const raw = await fetch(`${context.api.url}/emails/${email!.id}/raw`, {
      headers: { authorization: `Bearer ${context.project.secretKey}` }
    })
    expect(await raw.text()).toContain("Message-ID: <first-message@writer.test>")
    expect((await secret("GET", "/emails?direction=sideways")).status).toBe(422)
    // Sent-mail filters leave it out.
    expect(((await secret("GET", "/emails?direction=outbound")).json.data as Array<{ id: string }>).map((row) => row.id)).not.toContain(
      email!.id
    )

    // The same message delivered again (a sender retrying after a lost 250) is recorded once.
    await transport().sendMail({
      from: "ada@writer.test",
      to: "support@acme.test",
      subject: "Help with my order",
      text: "again",
      messageId: "<first-message@writer.test>"
    })
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await receivedEvents(contact.id)).toHaveLength(1)

    // Activity shows it.
    const activity = await secret("GET", `/activity?types=email.received&contactId=${contact.id}`)
    expect(activity.json.data.map((item: { type: string }) => item.type)).toEqual(["email.received"])
  })

  it("refuses recipients at unverified or unknown domains at RCPT TO (550)", async () => {
    const error = await transport().sendMail({ from: "x@writer.test", to: "someone@unverified.test", subject: "hi", text: "hi" })
      .then(() => undefined, (failure: { responseCode?: number; code?: string }) => failure)
    expect(error?.code).toBe("EENVELOPE")
    expect(error?.responseCode).toBe(550)
    // A mix: only the verified domain's recipient is accepted.
    const info = await transport().sendMail({
      from: "x@writer.test",
      to: ["a@acme.test", "b@elsewhere.test"],
      subject: "mixed",
      text: "hi"
    })
    expect(info.accepted).toEqual(["a@acme.test"])
    expect(info.rejected).toEqual(["b@elsewhere.test"])
  })

  it("refuses a message over INBOUND_MAX_BYTES (552)", async () => {
    const error = await transport().sendMail({
      from: "big@writer.test",
      to: "support@acme.test",
      subject: "huge",
      text: "x".repeat(MAX_BYTES * 2)
    }).then(() => undefined, (failure: { responseCode?: number }) => failure)
    expect(error?.responseCode).toBe(552)
    expect(await contactByEmail("big@writer.test")).toBeUndefined()
  })

  it("records SPF, DKIM and DMARC: a DKIM-signed message from a domain with SPF and DMARC passes", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const spki = publicKey.export({ type: "spki", format: "der" }).toString("base64")
    context.dns.addTxt("mail._domainkey.signed.test", `v=DKIM1; k=rsa; p=${spki}`)
    context.dns.addTxt("signed.test", "v=spf1 ip4:127.0.0.1 ip6:::1 -all")
    context.dns.addTxt("_dmarc.signed.test", "v=DMARC1; p=reject")
    const signed = nodemailer.createTransport({
      host: "127.0.0.1",
      port: inboundPort,
      secure: false,
      ignoreTLS: true,
      name: "mx.signed.test",
      dkim: { domainName: "signed.test", keySelector: "mail", privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
    })
    await signed.sendMail({
      from: "grace@signed.test",
      to: "support@acme.test",
      subject: "Signed",
      text: "authentic",
      envelope: { from: "grace@signed.test", to: "support@acme.test" }
    })
    const email = await eventually(async () => {
      const found = (await inboundEmails()).find((row) => row.from === "grace@signed.test")
      expect(found).toBeDefined()
      return found!
    })
    const detail = await secret("GET", `/emails/${email.id}`)
    expect(detail.json.authentication).toEqual({ spf: "pass", dkim: "pass", dkimDomains: ["signed.test"], dmarc: "pass" })

    // Tampered in transit (the body changed after signing): DKIM fails, and so does DMARC's alignment through it.
    const tampered = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" })
    const built = await tampered.sendMail({
      from: "grace@signed.test",
      to: "support@acme.test",
      subject: "Tampered",
      text: "original",
      dkim: { domainName: "signed.test", keySelector: "mail", privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
    })
    const raw = (built.message as Buffer).toString().replace("original", "changed!")
    await transport().sendMail({ envelope: { from: "grace@signed.test", to: ["support@acme.test"] }, raw })
    const bad = await eventually(async () => {
      const found = (await inboundEmails()).find((row) => row.subject === "Tampered")
      expect(found).toBeDefined()
      return found!
    })
    const badResults = (await secret("GET", `/emails/${bad.id}`)).json.authentication
    // mailauth calls a body hash mismatch "neutral" (RFC 8601's code for a signature that did not verify for that reason).
    expect(badResults.dkim).not.toBe("pass")
    expect(badResults.dkimDomains).toEqual([])
  })

  it("links a reply to the email it answers (In-Reply-To)", async () => {
    const sent = await secret("POST", "/v1/send", {
      to: "linus@reader.test",
      from: "hello@acme.test",
      subject: "Our news",
      body: "<p>Hi</p>"
    })
    expect(sent.status, sent.text).toBe(200)
    const emailId: string = sent.json.data.emails[0].email
    const original = await eventually(async () => {
      const found = await secret("GET", `/emails/${emailId}`)
      expect(found.json.status).toBe("SENT")
      return found.json
    })
    await transport().sendMail({
      from: "linus@reader.test",
      to: "hello@acme.test",
      subject: "Re: Our news",
      text: "Thanks!",
      inReplyTo: `<${original.messageId}>`,
      references: [`<unrelated@reader.test>`, `<${original.messageId}>`]
    })
    const reply = await eventually(async () => {
      const found = (await inboundEmails()).find((row) => row.subject === "Re: Our news")
      expect(found).toBeDefined()
      return found!
    })
    expect(reply.inReplyTo).toBe(emailId)
    await eventually(async () => {
      const events = await receivedEvents(reply.contactId)
      expect(events.find((event) => event.data.emailId === reply.id)?.data.inReplyTo).toBe(emailId)
    })
  })

  it("counts received mail in the inbound billing category", async () => {
    const usage = await withSql(
      context.stack.databaseUrl,
      Effect.flatMap(Effect.service(Billing), (billing) => billing.consumption(context.project.id)).pipe(Effect.provide(Billing.layer))
    )
    const received = (await inboundEmails()).length
    expect(received).toBeGreaterThanOrEqual(4)
    expect(usage.usage.inbound).toBe(received)
    expect(usage.usage.transactional).toBe(1)
  })
})

/** An SES receipt notification (AWS: "Amazon SES email receiving notification contents"), SNS action. */
const sesReceipt = (
  raw: string,
  recipients: Array<string>,
  snsId: string,
  action: Record<string, string> = { type: "SNS", topicArn: SES_TOPIC, encoding: "BASE64" }
) =>
  signedSns({
    Type: "Notification",
    MessageId: snsId,
    TopicArn: SES_TOPIC,
    Message: JSON.stringify({
      notificationType: "Received",
      receipt: {
        timestamp: new Date().toISOString(),
        processingTimeMillis: 420,
        recipients,
        spamVerdict: { status: "PASS" },
        virusVerdict: { status: "PASS" },
        spfVerdict: { status: "PASS" },
        dkimVerdict: { status: "GRAY" },
        dmarcVerdict: { status: "PASS" },
        action
      },
      mail: {
        timestamp: new Date().toISOString(),
        source: "carol@ses-sender.test",
        messageId: "ses-internal-1",
        destination: recipients,
        headersTruncated: false,
        headers: raw.split("\r\n\r\n")[0]!.split("\r\n").map((line) => ({
          name: line.slice(0, line.indexOf(":")),
          value: line.slice(line.indexOf(":") + 2)
        })),
        commonHeaders: { from: ["carol@ses-sender.test"], to: recipients, subject: "Via SES" }
      },
      ...(action.type === "SNS" ? { content: Buffer.from(raw).toString("base64") } : {})
    })
  })

describe("SES inbound through the SNS webhook", () => {
  it("records a Received notification like SMTP mail, once, and refuses a forged one", async () => {
    const raw = [
      "From: Carol <carol@ses-sender.test>",
      "To: sales@acme.test",
      "Subject: Via SES",
      "Message-ID: <ses-1@ses-sender.test>",
      "Content-Type: text/plain; charset=utf-8",
      "",
      "Hello through SES",
      ""
    ].join("\r\n")
    const post = (message: Record<string, string>) =>
      request(context.api.url, "POST", "/webhooks/ses", {
        rawBody: JSON.stringify(message),
        headers: { "content-type": "text/plain; charset=UTF-8" }
      })

    const forged = sesReceipt(raw, ["sales@acme.test"], "sns-forged")
    forged.Message = forged.Message!.replace("Via SES", "Forged")
    expect((await post(forged)).status).toBe(403)

    const first = await post(sesReceipt(raw, ["sales@acme.test", "other@not-ours.test"], "sns-in-1"))
    expect(first.status, first.text).toBe(200)
    expect(first.json.data.received).toBe(1)
    // SNS delivers at least once: the repeat is not recorded again.
    expect((await post(sesReceipt(raw, ["sales@acme.test"], "sns-in-1"))).json.data.received).toBe(0)

    const contact = await eventually(async () => {
      const found = await contactByEmail("carol@ses-sender.test")
      expect(found).toBeDefined()
      return found!
    })
    expect(contact.subscribed).toBe(false)
    const events = await eventually(async () => {
      const found = await receivedEvents(contact.id)
      expect(found).toHaveLength(1)
      return found
    })
    expect(events[0]!.data).toMatchObject({
      subject: "Via SES",
      to: ["sales@acme.test"],
      via: "ses",
      authentication: { spf: "pass", dkim: "gray", dmarc: "pass" }
    })
  })

  it("records an S3-action notification from its headers (the body stays in the bucket)", async () => {
    const raw =
      "From: dave@ses-sender.test\r\nTo: sales@acme.test\r\nSubject: Stored in S3\r\nMessage-ID: <s3-1@ses-sender.test>\r\n\r\nbody\r\n"
    const res = await request(context.api.url, "POST", "/webhooks/ses", {
      rawBody: JSON.stringify(sesReceipt(raw, ["sales@acme.test"], "sns-s3-1", { type: "S3", bucketName: "mail", objectKey: "k1" })),
      headers: { "content-type": "text/plain; charset=UTF-8" }
    })
    expect(res.json.data.received).toBe(1)
    const email = await eventually(async () => {
      const found = (await inboundEmails()).find((row) => row.subject === "Stored in S3")
      expect(found).toBeDefined()
      return found!
    })
    expect(email.from).toBe("dave@ses-sender.test")
    // No message to download: only its headers arrived.
    expect((await secret("GET", `/emails/${email.id}/raw`)).status).toBe(404)
  })
})
