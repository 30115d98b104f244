/**
 * Turns content and a recipient into a queued email: renders subject and body for the contact, adds
 * open/click tracking when the project has it on, the RFC 8058 one-click unsubscribe headers for
 * marketing mail and any mail that links to the unsubscribe or manage page, and the bulk-mail headers
 * for campaign and marketing mail (src/mail/headers.ts). Shared by every way mail is made (/v1/send,
 * campaigns, workflow SEND_EMAIL steps, campaign test mails), through the MailQueue.
 *
 * Size caps hold at render time, whatever the template and data: the subject line, the HTML body
 * (rendering stops at the cap) and the whole message. Mail over a cap is a MailTooLarge, never a row;
 * a template that fails on the recipient's data is a RenderError (both typed, src/mail/errors.ts).
 */
import { Effect } from "effect"
import { uuidv7 } from "../domain/ids.ts"
import type { Attachment, EmailType, NewEmail } from "../store/Emails.ts"
import { MailTooLarge, RenderError } from "./errors.ts"
import { mailHeaders } from "./headers.ts"
import { addTracking, contactLinks } from "./links.ts"
import { type CompiledTemplate, OutputLimitError, templateVariables } from "./render.ts"

/** RFC 5322's line limit: a rendered subject (line breaks become spaces) is at most this long. */
export const MAX_SUBJECT_CHARS = 998
/**
 * The rendered HTML body of one email, in UTF-8 bytes, tracking included. Far above any real mail
 * (Gmail clips bodies past ~100 KB), and small enough that a queued row always loads in one piece.
 */
export const MAX_HTML_BYTES = 5 * 1024 * 1024
/** The whole message (subject, body, headers, attachments as sent in base64): the spec's 40 MB. */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024

const subjectTooLong = (to: string, detail: string) =>
  new MailTooLarge({
    part: "subject",
    limit: MAX_SUBJECT_CHARS,
    message: `The subject for ${to} renders to ${detail}; a subject is at most ${MAX_SUBJECT_CHARS} characters`
  })

const bodyTooLarge = (to: string, detail: string) =>
  new MailTooLarge({
    part: "body",
    limit: MAX_HTML_BYTES,
    message: `The body for ${to} renders to ${detail}; an email's HTML body is at most ${MAX_HTML_BYTES} bytes (5 MB)`
  })

/** The body cap, from the body's size alone (the sender checks stored rows before reading them). */
export const htmlTooLarge = (to: string, bytes: number): MailTooLarge | undefined =>
  bytes > MAX_HTML_BYTES ? bodyTooLarge(to, `${bytes} bytes`) : undefined

/** The bytes of a message as sent: subject, HTML, header lines, attachments in base64. */
export const messageBytes = (email: Pick<NewEmail, "subject" | "html" | "headers" | "attachments">): number =>
  Buffer.byteLength(email.subject) + Buffer.byteLength(email.html) +
  Object.entries(email.headers).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value) + 4, 0) +
  email.attachments.reduce((sum, attachment) => sum + attachment.content.length, 0)

/** The cap a stored email breaks, if any (mail queued before the caps, or written around them). */
export const capExceeded = (email: Pick<NewEmail, "to" | "subject" | "html" | "headers" | "attachments">): MailTooLarge | undefined => {
  if (email.subject.length > MAX_SUBJECT_CHARS) return subjectTooLong(email.to, `${email.subject.length} characters`)
  if (/[\r\n]/.test(email.subject)) {
    return new MailTooLarge({
      part: "subject",
      limit: MAX_SUBJECT_CHARS,
      message: `The subject for ${email.to} spans several lines; a subject is one line`
    })
  }
  const html = htmlTooLarge(email.to, Buffer.byteLength(email.html))
  if (html) return html
  const size = messageBytes(email)
  if (size > MAX_MESSAGE_BYTES) {
    return new MailTooLarge({
      part: "message",
      limit: MAX_MESSAGE_BYTES,
      message:
        `The message for ${email.to} would be ${size} bytes; a whole message (body, headers and attachments) is at most ${MAX_MESSAGE_BYTES} bytes (40 MB)`
    })
  }
  return undefined
}

/** Renders a template; output past `maxChars` is `tooLarge`, any other failure a RenderError. */
const renderPart = (
  template: CompiledTemplate,
  variables: Record<string, unknown>,
  maxChars: number,
  tooLarge: (limit: number) => MailTooLarge
) =>
  Effect.tryPromise({
    try: () => template.render(variables, maxChars),
    catch: (error) =>
      error instanceof OutputLimitError
        ? tooLarge(error.limit)
        : new RenderError({ message: error instanceof Error ? error.message : String(error) })
  })

export interface ProjectMailSettings {
  readonly projectId: string
  readonly linkSecret: string
  readonly trackingEnabled: boolean
  readonly publicUrl: string
}

export interface PreparedContent {
  readonly subject: CompiledTemplate
  readonly body: CompiledTemplate
  readonly from: string
  readonly fromName: string | null
  readonly replyTo: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly attachments: ReadonlyArray<Attachment>
  readonly type: EmailType
  /** A MARKETING template's content sent as transactional mail (/v1/send): held back from unsubscribed contacts too. */
  readonly marketingTemplate?: boolean
  readonly templateId: string | null
  readonly campaignId?: string | null
  readonly workflowId?: string | null
}

export interface Recipient {
  readonly contactId: string
  readonly email: string
  readonly name: string | null
  readonly data: Readonly<Record<string, unknown>>
}

export const prepareEmail = Effect.fnUntraced(function*(
  settings: ProjectMailSettings,
  content: PreparedContent,
  recipient: Recipient,
  sendData: Readonly<Record<string, unknown>> | undefined
) {
  const id = uuidv7()
  const links = contactLinks(settings.publicUrl, settings.linkSecret, recipient.contactId, id)
  const variables = templateVariables({
    contact: { id: recipient.contactId, email: recipient.email, data: recipient.data },
    sendData,
    links
  })
  // Subjects never span lines, whatever the data held; line breaks and surrounding spaces are dropped
  // after rendering, so leave room for them.
  const subject = (yield* renderPart(content.subject, variables, MAX_SUBJECT_CHARS * 4, (limit) =>
    subjectTooLong(recipient.email, `more than ${limit} characters`)))
    .replace(/[\r\n]+/g, " ").trim()
  // Characters never outnumber UTF-8 bytes: stopping at MAX_HTML_BYTES characters bounds the work.
  let html = yield* renderPart(content.body, variables, MAX_HTML_BYTES, (limit) =>
    bodyTooLarge(recipient.email, `more than ${limit} characters`))
  // A body that lets the recipient opt out (its unsubscribe or manage link) gets one-click too, whatever the mail's type.
  const letsRecipientOptOut = html.includes(links.unsubscribeUrl) || html.includes(links.manageUrl)
  if (settings.trackingEnabled)
    html = addTracking(html, { publicUrl: settings.publicUrl, secret: settings.linkSecret, emailId: id })
  const headers = mailHeaders({
    bulk: content.type === "MARKETING" || (content.campaignId ?? null) !== null,
    unsubscribeUrl: content.type === "MARKETING" || letsRecipientOptOut ? links.unsubscribeUrl : undefined,
    custom: content.headers
  })
  const domain = content.from.slice(content.from.lastIndexOf("@") + 1)
  const tooLarge = capExceeded({ to: recipient.email, subject, html, headers, attachments: content.attachments })
  if (tooLarge)
    return yield* tooLarge
  return {
    id,
    projectId: settings.projectId,
    contactId: recipient.contactId,
    to: recipient.email,
    toName: recipient.name,
    from: content.from,
    fromName: content.fromName,
    replyTo: content.replyTo,
    subject,
    html,
    headers,
    attachments: content.attachments,
    type: content.type,
    marketingTemplate: content.marketingTemplate === true,
    templateId: content.templateId,
    campaignId: content.campaignId ?? null,
    workflowId: content.workflowId ?? null,
    messageId: `${id}@${domain}`
  } satisfies NewEmail as NewEmail
})
