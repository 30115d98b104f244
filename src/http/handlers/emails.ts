import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { EMAIL_DIRECTIONS, EMAIL_STATUSES, type TimelineStep } from "../../domain/email.ts"
import { removeTracking } from "../../mail/links.ts"
import { htmlToPlainText } from "../../mail/plainText.ts"
import { MAX_HTML_BYTES } from "../../mail/prepare.ts"
import { headerLines, rawMessage } from "../../mail/rawMessage.ts"
import { EmailHistory } from "../../store/EmailHistory.ts"
import type { EmailContent, EmailRecord } from "../../store/Emails.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { fieldReader } from "../fieldReader.ts"
import { nonEmpty, parseLimit } from "../query.ts"
import { NotFound } from "../api/statusErrors.ts"

/** What the API shows of a record: the project is implied, the names and reply-to belong to the detail. */
const toEmailView = ({ projectId: _p, toName: _t, fromName: _f, replyTo: _r, ...view }: EmailRecord) => view

/**
 * An attachment past this (as stored, base64) is not read back: the Postgres client reads at most 16 MiB
 * in one message, and only rows stored before the caps (10 MB of attachments) hold one that large.
 */
const MAX_READABLE_ATTACHMENT = 14 * 1024 * 1024

/** The raw message, dated when it was sent (or queued, for mail not sent yet). */
const messageOf = (email: EmailRecord, content: EmailContent) =>
  Effect.promise(() =>
    rawMessage(
      {
        from_name: email.fromName,
        from_email: email.from,
        to_name: email.toName,
        to_email: email.to,
        reply_to: email.replyTo,
        message_id: email.messageId
      },
      content,
      new Date(email.sentAt ?? email.createdAt)
    )
  )

/** One direction asked for filters; both (or none) do not. */
const onlyOne = <T>(values: ReadonlyArray<T> | undefined) => (values !== undefined && new Set(values).size === 1 ? values[0] : undefined)

/** Each stamped step in time order, then how the email ended when it was not sent. */
const timelineOf = (email: EmailRecord) => {
  if (email.direction === "inbound") return [{ step: "RECEIVED" as const, at: email.createdAt }]
  const stamped: Array<readonly [TimelineStep, string | null]> = [
    ["QUEUED", email.createdAt],
    ["SENT", email.sentAt],
    ["DELIVERED", email.deliveredAt],
    ["OPENED", email.openedAt],
    ["CLICKED", email.clickedAt],
    ["BOUNCED", email.bouncedAt],
    ["COMPLAINED", email.complainedAt]
  ]
  const steps = stamped.flatMap(([step, at]) => (at === null ? [] : [{ step, at }])).sort((a, b) => a.at.localeCompare(b.at))
  const ended = email.status === "FAILED" || email.status === "SUPPRESSED"
    ? [{ step: email.status, at: null, ...(email.error ? { detail: email.error } : {}) }]
    : []
  return [...steps, ...ended]
}

export const EmailsHandlers = HttpApiBuilder.group(
  Api,
  "emails",
  Effect.fnUntraced(function*(handlers) {
    const history = yield* EmailHistory
    const config = yield* AppConfig

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      return (yield* history.detail(project.id, id, MAX_HTML_BYTES)) ?? (yield* NotFound.of("Email"))
    })

    const cannotCompose = (message: string) => new NotFound({ code: "NOT_FOUND", message })

    return handlers
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const read = fieldReader()
          const listQuery = {
            limit: parseLimit(query.limit),
            cursor: nonEmpty(query.cursor),
            statuses: read.list("status", query.status?.toUpperCase(), EMAIL_STATUSES, "statuses"),
            direction: onlyOne(read.list("direction", query.direction?.toLowerCase(), EMAIL_DIRECTIONS, "directions")),
            recipient: nonEmpty(query.recipient?.trim()),
            templateId: read.uuid("templateId", query.templateId),
            campaignId: read.uuid("campaignId", query.campaignId),
            workflowId: read.uuid("workflowId", query.workflowId),
            since: read.instant("since", query.since),
            until: read.instant("until", query.until)
          }
          yield* read.done()
          const page = yield* history.list(project.id, listQuery)
          return { ...page, data: page.data.map(toEmailView) }
        })))
      .handle("get", ({ params }) =>
        rendered(Effect.gen(function*() {
          const found = yield* find(params.id)
          const { email, html, contentExpiredAt } = found
          // The headers as composed, with the attachments' parts but not their content (never read here).
          const raw = yield* messageOf(email, {
            subject: email.subject,
            html: html ?? "",
            headers: found.headers,
            attachments: found.attachments.map((attachment) => ({
              filename: attachment.filename,
              content: "",
              contentType: attachment.contentType ?? undefined,
              ...(attachment.contentId === null ? {} : { contentId: attachment.contentId, disposition: attachment.disposition })
            }))
          })
          const text = html === null ? "" : htmlToPlainText(html)
          return {
            ...toEmailView(email),
            toName: email.toName,
            fromName: email.fromName,
            replyTo: email.replyTo,
            contentExpiredAt,
            html,
            previewHtml: html === null ? null : removeTracking(html, email.id),
            text: text === "" ? null : text,
            // Received mail: its header lines as they arrived.
            headers: headerLines(found.receivedHead ?? raw),
            attachments: found.attachments.map((attachment) => ({
              filename: attachment.filename,
              contentType: attachment.contentType,
              contentId: attachment.contentId,
              disposition: attachment.disposition,
              size: attachment.size
            })),
            authentication: found.authentication,
            timeline: timelineOf(email)
          }
        })))
      .handle("raw", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const found = yield* find(params.id)
          const { email, html } = found
          const asReceived = email.direction === "inbound" ? yield* history.received(project.id, email.id) : undefined
          if (asReceived !== undefined) {
            return HttpServerResponse.uint8Array(asReceived, {
              contentType: "message/rfc822",
              headers: { "content-disposition": `attachment; filename="${email.id}.eml"` }
            })
          }
          if (email.direction === "inbound") {
            return yield* cannotCompose(
              found.contentExpiredAt !== null
                ? `This email's content is no longer kept: mail keeps it ${config.emailContentRetentionDays} days (EMAIL_CONTENT_RETENTION_DAYS)`
                : "Only this email's headers were received (an SES receipt rule with an S3 action keeps the message in its bucket)"
            )
          }
          if (found.contentExpiredAt !== null) {
            return yield* cannotCompose(
              `This email's content is no longer kept: sent mail keeps it ${config.emailContentRetentionDays} days (EMAIL_CONTENT_RETENTION_DAYS)`
            )
          }
          if (html === null || found.attachments.some((attachment) => attachment.storedBytes > MAX_READABLE_ATTACHMENT)) {
            return yield* cannotCompose(
              "This email is larger than the size caps (it was stored before them): its message cannot be composed"
            )
          }
          const attachments = yield* history.attachments(project.id, email.id, found.attachments.length)
          const raw = yield* messageOf(email, { subject: email.subject, html, headers: found.headers, attachments })
          return HttpServerResponse.uint8Array(raw, {
            contentType: "message/rfc822",
            headers: { "content-disposition": `attachment; filename="${email.id}.eml"` }
          })
        })))
  })
)
