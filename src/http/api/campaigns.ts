import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { Json, pageFields, sortedPageQuery, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"
import { mailContentFields, mailContentInput } from "./templates.ts"

const Status = Schema.Literals(["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"])

export const Campaign = Schema.Struct({
  id: Schema.String,
  ...mailContentFields,
  status: Status,
  audienceType: Schema.Literals(["ALL", "SEGMENT", "FILTERED"]),
  segmentId: Schema.NullOr(Schema.String),
  audienceCondition: Schema.NullOr(Schema.Unknown),
  scheduledFor: Schema.NullOr(Schema.String),
  totalRecipients: Schema.Number,
  sentCount: Schema.Number,
  deliveredCount: Schema.Number,
  openedCount: Schema.Number,
  clickedCount: Schema.Number,
  bouncedCount: Schema.Number,
  projectId: Schema.String,
  sentAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotate({ identifier: "Campaign" })

/** Checked by the handler, so every missing or invalid field is reported at once as a 422. */
export const CampaignBody = Schema.Struct({
  ...mailContentInput,
  audienceType: Schema.optional(Schema.Literals(["ALL", "SEGMENT", "FILTERED"])),
  segmentId: Schema.optional(Schema.NullOr(Text)),
  audienceCondition: Schema.optional(Schema.NullOr(Json))
})

const Stats = Schema.Struct({
  id: Schema.String,
  status: Status,
  resolved: Schema.Boolean,
  queued: Schema.Boolean,
  totalRecipients: Schema.Number,
  sent: Schema.Number,
  delivered: Schema.Number,
  opened: Schema.Number,
  clicked: Schema.Number,
  bounced: Schema.Number,
  complained: Schema.Number,
  failed: Schema.Number,
  pending: Schema.Number,
  skipped: Schema.Struct({ unsubscribed: Schema.Number, suppressed: Schema.Number, deleted: Schema.Number }),
  rates: Schema.Struct({ delivery: Schema.Number, open: Schema.Number, click: Schema.Number, bounce: Schema.Number }),
  sendingStartedAt: Schema.NullOr(Schema.String),
  resolvedAt: Schema.NullOr(Schema.String),
  sentAt: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String).annotate({
    description: "Why the service stopped the campaign (CANCELLED) when a fan-out step could not run, e.g. its content no longer compiles"
  })
}).annotate({ identifier: "CampaignStats" })

const IdParam = { id: Text }
const Wrapped = Schema.Struct({ success: Schema.Literal(true), data: Campaign })

export class CampaignsApi extends HttpApiGroup.make("campaigns")
  .add(
    HttpApiEndpoint.post("create", "/campaigns", {
      payload: CampaignBody,
      success: Wrapped,
      error: [...commonErrors, ErrorDocs.forbidden, ErrorDocs.validation]
    }).annotate(
      OpenApi.Description,
      "A DRAFT campaign. Required: name, subject, body, from (domain verified: 403 otherwise), audienceType; SEGMENT " +
        "needs segmentId, FILTERED needs audienceCondition."
    ),
    HttpApiEndpoint.get("list", "/campaigns", {
      query: {
        ...sortedPageQuery("case-insensitive, over name, subject and sender address"),
        status: Schema.optional(Text).annotate({ description: "DRAFT | SCHEDULED | SENDING | SENT | CANCELLED (other values: 400)" })
      },
      success: Schema.Struct(pageFields(Campaign)),
      error: [...commonErrors, ErrorDocs.bare]
    }),
    HttpApiEndpoint.get("get", "/campaigns/:id", { params: IdParam, success: Campaign, error: [...commonErrors, ErrorDocs.notFound] }),
    HttpApiEndpoint.put("replace", "/campaigns/:id", {
      params: IdParam,
      payload: CampaignBody,
      success: Campaign,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.forbidden, ErrorDocs.conflict, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Replaces the campaign (same rules as create); only while DRAFT or SCHEDULED (409 otherwise)."),
    HttpApiEndpoint.delete("delete", "/campaigns/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.conflict]
    }).annotate(OpenApi.Description, "409 while the campaign is SENDING (cancel it first)."),
    HttpApiEndpoint.post("duplicate", "/campaigns/:id/duplicate", {
      params: IdParam,
      success: Wrapped,
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "A new DRAFT with the same content and audience; the original is unchanged."),
    HttpApiEndpoint.post("test", "/campaigns/:id/test", {
      params: IdParam,
      payload: Schema.Struct({ email: Text }),
      success: Schema.Struct({ success: Schema.Literal(true), data: Schema.Struct({ email: Schema.String, emailId: Schema.String }) }),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.forbidden, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Sends one rendered test mail to the address (subject prefixed [Test]); no counters, no events."),
    HttpApiEndpoint.get("stats", "/campaigns/:id/stats", { params: IdParam, success: Stats, error: [...commonErrors, ErrorDocs.notFound] })
      .annotate(OpenApi.Description, "Progress and outcome: recipients, sent, delivered, opened, clicked, bounced, failed, pending, skipped and why."),
    HttpApiEndpoint.post("send", "/campaigns/:id/send", {
      params: IdParam,
      payload: Schema.Struct({ scheduledFor: Schema.optional(Schema.NullOr(Text)) }),
      success: Schema.Struct({
        success: Schema.Literal(true),
        data: Schema.Struct({ id: Schema.String, name: Schema.String, status: Status, scheduledFor: Schema.NullOr(Schema.String) }),
        message: Schema.String
      }),
      error: [...commonErrors, ErrorDocs.bare, ErrorDocs.notFound, ErrorDocs.forbidden, ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "From DRAFT (or SCHEDULED, to reschedule): with a future `scheduledFor` → SCHEDULED; without it, null, or a past " +
        "date → SENDING now. An unparseable date is a bare 400; other states 409."
    ),
    HttpApiEndpoint.post("cancel", "/campaigns/:id/cancel", {
      params: IdParam,
      success: Wrapped,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.conflict]
    }).annotate(OpenApi.Description, "SCHEDULED or SENDING → CANCELLED; mail not yet handed to SMTP is not sent.")
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Campaigns", description: "One mail to an audience, now or scheduled (secret key)" }))
{}
