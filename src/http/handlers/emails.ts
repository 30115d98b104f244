import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { EMAIL_STATUSES } from "../../domain/email.ts"
import { removeTracking } from "../../mail/links.ts"
import { htmlToPlainText } from "../../mail/plainText.ts"
import { headerLines, rawMessage } from "../../mail/rawMessage.ts"
import { EmailHistory } from "../../store/EmailHistory.ts"
import type { EmailContent, EmailRecord } from "../../store/Emails.ts"
import { Api } from "../api/Api.ts"
import type { TIMELINE_STEPS } from "../api/emails.ts"
import { CurrentProject } from "../api/security.ts"
import { ApiError, rendered } from "../errors.ts"
import { fieldReader } from "../fieldReader.ts"
import { nonEmpty, parseLimit } from "../query.ts"

/** What the API shows of a record: the project is implied, the names and reply-to belong to the detail. */
const toEmailView = ({ projectId: _p, toName: _t, fromName: _f, replyTo: _r, ...view }: EmailRecord) => view

/** The raw message, dated when it was sent (or queued, for mail not sent yet). */
const messageOf = (email: EmailRecord, content: EmailContent) =>
  Effect.promise(() =>
    rawMessage(
      { from_name: email.fromName, from_email: email.from, to_name: email.toName, to_email: email.to, reply_to: email.replyTo, message_id: email.messageId },
      content,
      new Date(email.sentAt ?? email.createdAt)
    ))

/** Each stamped step in time order, then how the email ended when it was not sent. */
const timelineOf = (email: EmailRecord) => {
  const stamped: Array<readonly [(typeof TIMELINE_STEPS)[number], string | null]> = [
    ["QUEUED", email.createdAt], ["SENT", email.sentAt], ["DELIVERED", email.deliveredAt], ["OPENED", email.openedAt],
    ["CLICKED", email.clickedAt], ["BOUNCED", email.bouncedAt], ["COMPLAINED", email.complainedAt]
  ]
  const steps = stamped.flatMap(([step, at]) => (at === null ? [] : [{ step, at }])).sort((a, b) => a.at.localeCompare(b.at))
  const ended = email.status === "FAILED" || email.status === "SUPPRESSED"
    ? [{ step: email.status, at: null, ...(email.error ? { detail: email.error } : {}) }]
    : []
  return [...steps, ...ended]
}

export const EmailsHandlers = HttpApiBuilder.group(Api, "emails", Effect.fnUntraced(function*(handlers) {
  const history = yield* EmailHistory
  const config = yield* AppConfig

  const find = Effect.fnUntraced(function*(id: string) {
    const project = yield* CurrentProject
    return (yield* history.withContent(project.id, id)) ?? (yield* ApiError.notFound("Email"))
  })

  return handlers
    .handle("list", ({ query }) =>
      rendered(Effect.gen(function*() {
        const project = yield* CurrentProject
        const read = fieldReader()
        const listQuery = {
          limit: parseLimit(query.limit),
          cursor: nonEmpty(query.cursor),
          statuses: read.list("status", query.status?.toUpperCase(), EMAIL_STATUSES, "statuses"),
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
        const { email, content, contentExpiredAt } = yield* find(params.id)
        const raw = yield* messageOf(email, content)
        const text = htmlToPlainText(content.html)
        return {
          ...toEmailView(email),
          toName: email.toName,
          fromName: email.fromName,
          replyTo: email.replyTo,
          contentExpiredAt,
          html: content.html,
          previewHtml: removeTracking(content.html, email.id),
          text: text === "" ? null : text,
          headers: headerLines(raw),
          attachments: content.attachments.map((attachment) => ({
            filename: attachment.filename,
            contentType: attachment.contentType ?? null,
            size: Math.floor(attachment.content.replace(/=+$/, "").length * 3 / 4)
          })),
          timeline: timelineOf(email)
        }
      })))
    .handle("raw", ({ params }) =>
      rendered(Effect.gen(function*() {
        const { email, content, contentExpiredAt } = yield* find(params.id)
        if (contentExpiredAt !== null) {
          return yield* new ApiError({
            status: 404,
            code: "NOT_FOUND",
            message: `This email's content is no longer kept: sent mail keeps it ${config.emailContentRetentionDays} days (EMAIL_CONTENT_RETENTION_DAYS)`
          })
        }
        const raw = yield* messageOf(email, content)
        return HttpServerResponse.uint8Array(raw, {
          contentType: "message/rfc822",
          headers: { "content-disposition": `attachment; filename="${email.id}.eml"` }
        })
      })))
}))
