/**
 * The mail a project sent (secret key, or a member's session): every email, transactional, campaign
 * and workflow, newest first, and one email with what it carried and what happened to it. Under local
 * delivery (no SMTP_URL) this is the inbox where a developer reads what was sent.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AuthenticationResults, EMAIL_DIRECTIONS, EMAIL_STATUSES, TIMELINE_STEPS } from "../../domain/email.ts"
import { InvalidCursor } from "../../domain/errors.ts"
import { commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

export const EmailRecord = Schema.Struct({
  id: Schema.String,
  contactId: Schema.NullOr(Schema.String),
  to: Schema.String,
  from: Schema.String,
  subject: Schema.String,
  type: Schema.String,
  status: Schema.String,
  direction: Schema.Literals(EMAIL_DIRECTIONS).annotate({
    description: "outbound: mail the project sent; inbound: mail it received (status RECEIVED)"
  }),
  inReplyTo: Schema.NullOr(Schema.String).annotate({
    description: "Received mail: the id of the project's email it answers (its In-Reply-To or References), else null"
  }),
  templateId: Schema.NullOr(Schema.String),
  campaignId: Schema.NullOr(Schema.String),
  workflowId: Schema.NullOr(Schema.String),
  messageId: Schema.String,
  attempts: Count,
  error: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  sentAt: Schema.NullOr(Timestamp),
  deliveredAt: Schema.NullOr(Timestamp),
  openedAt: Schema.NullOr(Timestamp),
  clickedAt: Schema.NullOr(Timestamp),
  bouncedAt: Schema.NullOr(Timestamp),
  complainedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "Email" })

export const EmailDetail = Schema.Struct({
  ...EmailRecord.fields,
  toName: Schema.NullOr(Schema.String),
  fromName: Schema.NullOr(Schema.String),
  replyTo: Schema.NullOr(Schema.String),
  contentExpiredAt: Schema.NullOr(Timestamp).annotate({
    description: "When the content (html, text, attachments, our headers) was emptied, past EMAIL_CONTENT_RETENTION_DAYS; " +
      "then the raw message answers 404"
  }),
  html: Schema.NullOr(Schema.String).annotate({
    description: "The HTML body as sent (open pixel and tracked links included when tracking is on); null when over the 5 MB " +
      "cap (a row stored before the caps: not read back)"
  }),
  previewHtml: Schema.NullOr(Schema.String).annotate({
    description: "The HTML body without this email's open pixel and with its tracked links pointing where they lead: what to " +
      "show a reader here without counting an open or a click"
  }),
  text: Schema.NullOr(Schema.String).annotate({ description: "The text/plain part sent beside the HTML (none when the HTML has no text)" }),
  headers: Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.String })).annotate({
    description: "The message's header lines in order, as the raw message (GET /emails/:id/raw) carries them"
  }),
  attachments: Schema.Array(Schema.Struct({
    filename: Schema.String,
    contentType: Schema.NullOr(Schema.String),
    contentId: Schema.NullOr(Schema.String).annotate({
      description: "The part's Content-ID, for a part the HTML shows as cid:<contentId>"
    }),
    disposition: Schema.Literals(["attachment", "inline"]),
    size: Count
  })),
  authentication: Schema.NullOr(AuthenticationResults).annotate({
    description: "Received mail: SPF, DKIM and DMARC as checked on arrival (pass, fail, none, ...); null for sent mail"
  }),
  timeline: Schema.Array(Schema.Struct({
    step: Schema.Literals(TIMELINE_STEPS),
    at: Schema.NullOr(Timestamp).annotate({ description: "When (the first time, for opens and clicks); null for FAILED and SUPPRESSED" }),
    detail: Schema.optionalKey(Schema.String)
  })).annotate({ description: "What happened to the email, in order" })
}).annotate({ identifier: "EmailDetail" })

const ListQuery = queryParameters({
  ...cursorParams,
  status: QueryParam.text(`Comma-separated statuses: ${EMAIL_STATUSES.join(", ")}`),
  direction: QueryParam.literals(
    EMAIL_DIRECTIONS,
    "outbound: mail the project sent; inbound: mail it received; both when omitted (another value is a 422)"
  ),
  recipient: QueryParam.text("Only mail whose recipient address contains this text (case-insensitive)"),
  templateId: QueryParam.text("Only mail made from this template", "uuid"),
  campaignId: QueryParam.text("Only this campaign's mail", "uuid"),
  workflowId: QueryParam.text("Only this workflow's mail", "uuid"),
  since: QueryParam.dateTime("Only mail queued at or after this instant"),
  until: QueryParam.dateTime("Only mail queued before this instant")
})

export class EmailsApi extends HttpApiGroup.make("emails")
  .add(
    HttpApiEndpoint.get("list", "/emails", {
      query: ListQuery.fields,
      success: Schema.Struct({ data: Schema.Array(EmailRecord), cursor: Schema.NullOr(Schema.String), hasMore: Schema.Boolean }),
      error: [...commonErrors, ...inputErrors, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(
      OpenApi.Description,
      "Every email the project sent or queued (transactional, campaign and workflow mail) and received (direction inbound), " +
        "newest first, in cursor pages; filtered by direction, status, recipient, template, campaign, workflow and time."
    )
      .annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.get("get", "/emails/:id", {
      params: { id: Text },
      success: EmailDetail,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "One email: its status (PENDING → SENDING → SENT → DELIVERED …) and timestamps, what it carried (HTML, text part, " +
        "headers, attachments) and its timeline."
    ),
    HttpApiEndpoint.get("raw", "/emails/:id/raw", {
      params: { id: Text },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "message/rfc822" })),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "The email as a message/rfc822 file (an .eml): received mail as it arrived; sent mail composed from what is stored " +
        "exactly as the sender composes it, dated when it was sent; without a DKIM signature (the signature is made when the message is handed to the relay). 404 " +
        "once its content is no longer kept (EMAIL_CONTENT_RETENTION_DAYS), and for a row stored before the size caps."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Emails", description: "The mail the project sent (secret key)" }))
{}
