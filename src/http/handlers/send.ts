/**
 * POST /v1/send. Everything about the request is checked before anything is written; then the send
 * use case (src/mail/SendMail.ts) upserts each recipient's contact and queues their rendered email in
 * one transaction with the idempotency key's completion; the worker sends it under the throttle.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { toDataPatch } from "../../domain/customData.ts"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { isUuid } from "../../domain/ids.ts"
import type { MailTooLarge, MarketingToUnsubscribed, RenderError } from "../../mail/errors.ts"
import { MAX_MESSAGE_BYTES } from "../../mail/prepare.ts"
import { MAX_BYTES_PER_REQUEST, SendMail } from "../../mail/SendMail.ts"
import { makeRenderer } from "../../mail/render.ts"
import type { BillingLimitExceeded } from "../../store/Billing.ts"
import { Templates } from "../../store/Templates.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import type { SendBody } from "../api/send.ts"
import { CurrentProject } from "../api/security.ts"
import { type FieldError, rendered } from "../errors.ts"
import { Idempotency } from "../Idempotency.ts"
import { refuseOversizedData, validateData } from "./contactData.ts"
import { subjectProblem, syntaxProblem, verifiedDomainRule } from "./mailContent.ts"
import { attachmentProblems, decodedSize, MAX_ATTACHMENT_BYTES, toStoredAttachment } from "./sendAttachments.ts"
import { BadRequest, Forbidden, NotFound, PayloadTooLarge, ValidationFailed } from "../api/statusErrors.ts"

export const MAX_RECIPIENTS = 100
export const MAX_HEADER_VALUE = 998

/**
 * Headers we set ourselves (addressing, identity, signature, MIME structure). A sender's own
 * `List-Unsubscribe` (and `List-Unsubscribe-Post`) is allowed: it replaces ours (src/mail/headers.ts).
 */
const RESERVED_HEADERS = new Set([
  "from",
  "to",
  "cc",
  "bcc",
  "sender",
  "reply-to",
  "subject",
  "date",
  "message-id",
  "dkim-signature",
  "return-path",
  "mime-version",
  "content-type",
  "content-transfer-encoding"
])
/** RFC 5322 field name: printable ASCII except the colon. */
const HEADER_NAME = /^[!-9;-~]+$/

type AddressInput = string | { readonly name?: string | null | undefined; readonly email: string }

interface Address {
  readonly email: string
  readonly name: string | null
}

const addressOf = (input: AddressInput): Address =>
  typeof input === "string"
    ? { email: input.trim(), name: null }
    : { email: input.email.trim(), name: input.name?.trim() || null }

export const headerProblems = (headers: Readonly<Record<string, string>>): Array<FieldError> =>
  Object.entries(headers).flatMap(([name, value]): Array<FieldError> => {
    const field = `headers.${name}`
    if (/[\r\n]/.test(name)) return [{ field, message: "Header names must not contain CR or LF", code: "header_injection" }]
    if (!HEADER_NAME.test(name)) return [{ field, message: "Not a valid header name", code: "invalid_header" }]
    if (RESERVED_HEADERS.has(name.toLowerCase())) {
      return [{ field, message: `The ${name} header is set by the service and cannot be overridden`, code: "forbidden_header" }]
    }
    if (/[\r\n]/.test(value)) return [{ field, message: "Header values must not contain CR or LF", code: "header_injection" }]
    if (value.length > MAX_HEADER_VALUE) {
      return [{ field, message: `Header values must be at most ${MAX_HEADER_VALUE} characters`, code: "too_big" }]
    }
    return []
  })

const tooLarge = (message: string, details?: Record<string, unknown>) => PayloadTooLarge.of(message, details)

/**
 * A recipient's mail that cannot be made: over a size cap (a subject too long is 422 on `subject`;
 * a body or message too large is 413, naming the limit), or a template that fails to render (422).
 */
export const mailProblem = (error: RenderError | MailTooLarge, field = "body"): ValidationFailed | PayloadTooLarge => {
  if (error._tag === "MailTooLarge") {
    return error.part === "subject"
      ? ValidationFailed.of([{ field: "subject", message: error.message, code: "too_big" }])
      : tooLarge(error.message, { limit: error.limit, part: error.part })
  }
  return ValidationFailed.field(field, error.message, "render_failed")
}

/**
 * A MARKETING template to unsubscribed contacts: 400 as the reference answers it, in the envelope,
 * each refused recipient listed under its position in `to`.
 */
const marketingToUnsubscribed = (error: MarketingToUnsubscribed, toIsArray: boolean) =>
  new BadRequest({
    code: "CONTACT_UNSUBSCRIBED",
    message: `Cannot send a MARKETING template to unsubscribed contacts (${
      error.recipients.map((recipient) => recipient.email).join(", ")
    }); nothing was sent`,
    errors: error.recipients.map((recipient) => ({
      field: toIsArray ? `to[${recipient.index}]` : "to",
      message: `${recipient.email} is unsubscribed from marketing email`,
      code: "unsubscribed",
      received: recipient.email
    })),
    suggestion: "Use a TRANSACTIONAL template or send without a template, or leave these recipients out."
  })

export const billingLimitExceeded = (error: BillingLimitExceeded) =>
  new Forbidden({
    code: "BILLING_LIMIT_EXCEEDED",
    message: `This project's monthly ${error.category} email limit (${error.limit}) is reached`,
    details: { category: error.category, limit: error.limit, used: error.used },
    suggestion: "Raise the limit under billing limits, or wait for the next month."
  })

export const SendHandlers = HttpApiBuilder.group(
  Api,
  "send",
  Effect.fnUntraced(function*(handlers) {
    const sendMail = yield* SendMail
    const templates = yield* Templates
    const requireVerifiedDomain = yield* verifiedDomainRule
    const relay = yield* OutboxRelay
    const idempotency = yield* Idempotency
    const renderer = makeRenderer()

    const send = Effect.fnUntraced(function*(payload: typeof SendBody.Type, idempotencyKey: string | undefined) {
      const project = yield* CurrentProject

      // Recipients, in order.
      const toList = (Array.isArray(payload.to) ? payload.to : [payload.to]) as ReadonlyArray<AddressInput>
      if (toList.length === 0) return yield* ValidationFailed.field("to", "At least one recipient is required", "too_small")
      if (toList.length > MAX_RECIPIENTS) {
        return yield* ValidationFailed.field("to", `At most ${MAX_RECIPIENTS} recipients per call`, "too_big", toList.length)
      }
      const recipients = toList.map(addressOf)
      const problems: Array<FieldError> = []
      recipients.forEach((recipient, index) => {
        if (!isValidEmail(recipient.email)) {
          const field = Array.isArray(payload.to) ? `to[${index}]` : "to"
          problems.push({ field, message: "Expected a valid email address", code: "invalid_string", received: recipient.email })
        }
      })

      // Content: the template's, with explicit fields overriding it.
      let template = undefined
      if (payload.template !== undefined) {
        if (!isUuid(payload.template)) return yield* NotFound.of("Template")
        template = (yield* templates.get(project.id, payload.template)) ?? (yield* NotFound.of("Template"))
      }
      const subject = payload.subject ?? template?.subject
      const body = payload.body ?? template?.body
      if (subject === undefined) problems.push({ field: "subject", message: "subject is required without a template", code: "required" })
      if (body === undefined) problems.push({ field: "body", message: "body is required without a template", code: "required" })
      if (subject !== undefined) {
        const problem = subjectProblem("subject", subject) ?? syntaxProblem("subject", subject, "text")
        if (problem) problems.push(problem)
      }
      if (body !== undefined) {
        const problem = body.length === 0
          ? { field: "body", message: "The body must not be empty", code: "too_small" }
          : syntaxProblem("body", body, "html")
        if (problem) problems.push(problem)
      }

      const fromInput = payload.from === undefined ? undefined : addressOf(payload.from)
      const from = fromInput?.email ?? template?.from
      const fromName = fromInput?.name ?? payload.name?.trim() ?? template?.fromName ?? null
      if (from === undefined) {
        problems.push({ field: "from", message: "from is required unless the template has one", code: "required" })
      } else if (!isValidEmail(from)) {
        problems.push({ field: "from", message: "Expected a valid email address", code: "invalid_string", received: from })
      }
      const replyTo = payload.reply?.trim() ?? template?.replyTo ?? null
      if (replyTo !== null && !isValidEmail(replyTo)) {
        problems.push({ field: "reply", message: "Expected a valid email address", code: "invalid_string", received: replyTo })
      }
      problems.push(...headerProblems(payload.headers ?? {}))
      problems.push(...attachmentProblems(payload.attachments ?? []))
      if (problems.length > 0) return yield* ValidationFailed.of(problems)
      yield* validateData(payload.data)
      const attachments = (payload.attachments ?? []).map(toStoredAttachment)

      const attachmentBytes = attachments.reduce((sum, attachment) => sum + decodedSize(attachment.content), 0)
      if (attachmentBytes > MAX_ATTACHMENT_BYTES) {
        return yield* tooLarge(`Attachments total ${attachmentBytes} bytes; at most ${MAX_ATTACHMENT_BYTES} (10 MB) are allowed`)
      }
      // Each recipient's email is stored with its own copy of the attachments (base64) until it is sent.
      const storedAttachmentBytes = attachments.reduce((sum, attachment) => sum + attachment.content.length, 0) * recipients.length
      if (storedAttachmentBytes > MAX_BYTES_PER_REQUEST) {
        return yield* tooLarge(
          `Attachments to ${recipients.length} recipients total ${storedAttachmentBytes} bytes as stored (base64); at most ` +
            `${MAX_BYTES_PER_REQUEST} (50 MB) per request: send fewer recipients per request when attaching files`,
          { limit: MAX_BYTES_PER_REQUEST, part: "request" }
        )
      }
      const sourceBytes = body!.length + attachments.reduce((sum, attachment) => sum + attachment.content.length, 0)
      if (sourceBytes > MAX_MESSAGE_BYTES) {
        return yield* tooLarge(`The message would be about ${sourceBytes} bytes; at most ${MAX_MESSAGE_BYTES} (40 MB) are allowed`, {
          limit: MAX_MESSAGE_BYTES,
          part: "message"
        })
      }
      const sender = normalizeEmail(from!)
      yield* requireVerifiedDomain(project.id, sender)

      const patch = toDataPatch(payload.data)
      const content = {
        subject: renderer.compile(subject!, "text"),
        body: renderer.compile(body!, "html"),
        from: sender,
        fromName,
        replyTo: replyTo === null ? null : normalizeEmail(replyTo),
        headers: payload.headers ?? {},
        attachments,
        // The spec: /v1/send sends transactional mail, whatever the template's type; a MARKETING template's
        // content still goes to subscribed contacts only (refused below, held back by the sender).
        type: "TRANSACTIONAL" as const,
        marketingTemplate: template?.type === "MARKETING",
        templateId: template?.id ?? null
      }

      return yield* idempotency.once(
        project.id,
        idempotencyKey,
        "POST /v1/send",
        (claim) =>
          Effect.gen(function*() {
            const response = yield* sendMail.send(
              { projectId: project.id, recipients, content, patch, subscribed: payload.subscribed },
              (queued) => {
                const response = {
                  success: true as const,
                  data: {
                    emails: queued.map((item) => ({ contact: item.contact, email: item.emailId })),
                    timestamp: new Date().toISOString()
                  }
                }
                // The key is completed with the mail it queued: a retry after a crash can never send twice.
                return Effect.as(claim.complete(response), response)
              }
            ).pipe(
              Effect.catchTags({
                RenderError: (error) => Effect.fail(mailProblem(error)),
                MailTooLarge: (error) => Effect.fail(mailProblem(error)),
                RequestTooLarge: (error) => Effect.fail(tooLarge(error.message, { limit: error.limit, part: "request" })),
                MarketingToUnsubscribed: (error) => Effect.fail(marketingToUnsubscribed(error, Array.isArray(payload.to))),
                BillingLimitExceeded: (error) => Effect.fail(billingLimitExceeded(error))
              }),
              refuseOversizedData
            )
            yield* relay.wake
            return response
          })
      )
    })

    return handlers
      .handle("send", ({ payload, headers }) => rendered(send(payload, headers["idempotency-key"])))
  })
)
