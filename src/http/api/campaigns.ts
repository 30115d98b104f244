import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CampaignAudienceEmpty, CampaignNotSendable, InvalidCampaignState } from "../../domain/errors.ts"
import { isUuid } from "../../domain/uuid.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { pageParams, QueryParam, queryParameters, sortParams } from "./query.ts"
import { Count, Json, pageFields, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"
import { mailContentFields, mailContentInput } from "./templates.ts"

const STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"] as const
const Status = Schema.Literals(STATUSES)
/** A share of the mail sent (0 to 1 in practice; the schema checks responses, so it bounds only what cannot happen). */
const Rate = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

export const Campaign = Schema.Struct({
  id: Schema.String,
  ...mailContentFields,
  status: Status,
  audienceType: Schema.Literals(["ALL", "SEGMENT", "FILTERED"]),
  segmentId: Schema.NullOr(Schema.String),
  audienceCondition: Schema.NullOr(Schema.Unknown).annotate({
    description: "The FILTERED audience's condition tree (event filters as event.<name>)"
  }),
  scheduledFor: Schema.NullOr(Timestamp),
  totalRecipients: Count,
  sentCount: Count,
  deliveredCount: Count,
  openedCount: Count,
  clickedCount: Count,
  bouncedCount: Count,
  unsubscribedCount: Count.annotate({
    description:
      "Recipients who unsubscribed through a link of this campaign's mail (the List-Unsubscribe one-click too); bounces and complaints, which unsubscribe as well, are not counted here"
  }),
  billingHold: Schema.NullOr(Schema.String).annotate({
    description:
      "Why a SENDING campaign stopped queueing mail: the project's monthly campaigns limit is reached. It resumes by itself when the limit is raised or the month turns; null otherwise"
  }),
  projectId: Schema.String,
  sentAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Campaign" })

/** Checked by the handler, so every missing or invalid field is reported at once as a 422. */
export const CampaignBody = Schema.Struct({
  ...mailContentInput,
  audienceType: Schema.optional(Schema.Literals(["ALL", "SEGMENT", "FILTERED"])),
  segmentId: Schema.optional(Schema.NullOr(Text)),
  audienceCondition: Schema.optional(Schema.NullOr(Json))
})

export const CampaignStats = Schema.Struct({
  id: Schema.String,
  status: Status,
  resolved: Schema.Boolean,
  queued: Schema.Boolean,
  totalRecipients: Count,
  sent: Count,
  delivered: Count,
  opened: Count,
  clicked: Count,
  bounced: Count,
  complained: Count,
  unsubscribedCount: Count.annotate({
    description: "Recipients who unsubscribed through a link of this campaign's mail (not bounces or complaints)"
  }),
  failed: Count,
  pending: Count,
  skipped: Schema.Struct({ unsubscribed: Count, suppressed: Count, deleted: Count }),
  rates: Schema.Struct({ delivery: Rate, open: Rate, click: Rate, bounce: Rate, unsubscribe: Rate }),
  sendingStartedAt: Schema.NullOr(Timestamp),
  resolvedAt: Schema.NullOr(Timestamp),
  sentAt: Schema.NullOr(Timestamp),
  error: Schema.NullOr(Schema.String).annotate({
    description: "Why the service stopped the campaign (CANCELLED) when a fan-out step could not run, e.g. its content no longer compiles"
  })
}).annotate({ identifier: "CampaignStats" })

const IdParam = { id: Text }
/** POST /campaigns/:id/send checks the id's form first, as the reference does (422 for one that is not a UUID). */
const UuidParam = {
  id: Text.check(
    Schema.makeFilter(
      (value: string) => isUuid(value),
      { expected: "a campaign id (a UUID)", code: "invalid_string" } as Schema.Annotations.Filter
    )
  )
    .annotate({ format: "uuid" } as Schema.Annotations.Documentation<string>)
}
const Wrapped = Schema.Struct({ success: Schema.Literal(true), data: Campaign })
const Created = Wrapped.pipe(HttpApiSchema.status(201))

const PageQuery = queryParameters(pageParams)
const ListQuery = queryParameters({
  ...pageParams,
  status: QueryParam.literals(STATUSES, "Only campaigns in this status; another value is a 400"),
  search: QueryParam.text("Case-insensitive, over name, subject and sender address"),
  ...sortParams(["name", "createdAt", "updatedAt"])
})

export class CampaignsApi extends HttpApiGroup.make("campaigns")
  .add(
    HttpApiEndpoint.post("create", "/campaigns", {
      payload: CampaignBody,
      success: Created,
      error: [...commonErrors, ...bodyErrors]
    }).annotate(
      OpenApi.Description,
      "201 with a DRAFT campaign. Required: name, subject, body, from (domain verified: 403 otherwise), audienceType " +
        "(a missing or invalid one: 422); SEGMENT needs segmentId, FILTERED needs audienceCondition (when that is all " +
        "that is wrong: 400 in the envelope, as the reference answers)."
    ),
    HttpApiEndpoint.get("list", "/campaigns", {
      query: ListQuery.fields,
      success: Schema.Struct(pageFields(Campaign)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.badRequest]
    }).annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.get("get", "/campaigns/:id", {
      params: IdParam,
      success: Campaign,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.put("replace", "/campaigns/:id", {
      params: IdParam,
      payload: CampaignBody,
      success: Campaign,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound, declared(InvalidCampaignState), ErrorDocs.conflict]
    }).annotate(OpenApi.Description, "Replaces the campaign (same rules as create); only while DRAFT or SCHEDULED (409 otherwise)."),
    HttpApiEndpoint.delete("delete", "/campaigns/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, declared(InvalidCampaignState), ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "Deletes a DRAFT; any other status is a 409 INVALID_CAMPAIGN_STATE (what was scheduled or sent keeps its record)."
    ),
    HttpApiEndpoint.post("duplicate", "/campaigns/:id/duplicate", {
      params: IdParam,
      success: Created,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "201 with a new DRAFT with the same content and audience; the original is unchanged."),
    HttpApiEndpoint.post("test", "/campaigns/:id/test", {
      params: IdParam,
      payload: Schema.Struct({ email: Text }),
      success: Schema.Struct({ success: Schema.Literal(true), data: Schema.Struct({ email: Schema.String, emailId: Schema.String }) }),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Sends one rendered test mail to the address (subject prefixed [Test]); no campaign counters, no events. It counts " +
        "against the month's campaigns cap (403 BILLING_LIMIT_EXCEEDED over it, nothing queued), and a project may queue " +
        "CAMPAIGN_TEST_SENDS_PER_HOUR of them in any hour (429 RATE_LIMIT_EXCEEDED with Retry-After)."
    ),
    HttpApiEndpoint.get("stats", "/campaigns/:id/stats", {
      params: IdParam,
      success: CampaignStats,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
      .annotate(
        OpenApi.Description,
        "Progress and outcome: recipients, sent, delivered, opened, clicked, bounced, complained, unsubscribed (`unsubscribedCount`), failed, pending, skipped and why."
      ),
    HttpApiEndpoint.get("recipients", "/campaigns/:id/recipients", {
      params: IdParam,
      query: PageQuery.fields,
      success: Schema.Struct({
        frozen: Schema.Boolean.annotate({
          description: "true once sending started: the recorded recipients; false: who it would go to if sent now"
        }),
        ...pageFields(Schema.Struct({
          contactId: Schema.String,
          email: Schema.NullOr(Schema.String).annotate({ description: "null: the contact was deleted since" }),
          status: Schema.NullOr(Schema.String).annotate({ description: "The mail's status, or SKIPPED; null before sending" }),
          skipped: Schema.NullOr(Schema.String).annotate({ description: "Why it was skipped: unsubscribed, suppressed, deleted, failed" })
        }))
      }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "The campaign's recipients by email, page-paginated: once sending started, those its audience was frozen to, with the " +
        "mail each got or why it was skipped; before (DRAFT, SCHEDULED), the contacts it would go to now (in the audience, " +
        "not suppressed and, for MARKETING, subscribed)."
    ).annotate(OpenApi.Transform, PageQuery.document),
    HttpApiEndpoint.post("send", "/campaigns/:id/send", {
      params: UuidParam,
      payload: Schema.Struct({
        scheduledFor: Schema.optional(Schema.NullOr(Text)).annotate({
          description: "When to send: any date JavaScript's Date parses (ISO 8601 recommended); omitted, null or past: now"
        })
      }),
      success: Schema.Struct({
        success: Schema.Literal(true),
        data: Schema.Struct({ id: Schema.String, name: Schema.String, status: Status, scheduledFor: Schema.NullOr(Timestamp) }),
        message: Schema.String
      }),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound, declared(CampaignNotSendable), declared(CampaignAudienceEmpty)]
    }).annotate(
      OpenApi.Description,
      "From DRAFT (or SCHEDULED, to reschedule): with a future `scheduledFor` → SCHEDULED; without it, null, or a past " +
        "date → SENDING now. 400 (envelope) for an unparseable date, a campaign in another state " +
        "(INVALID_CAMPAIGN_STATE) or one no contact would receive (EMPTY_AUDIENCE: none in the audience, or none subscribed " +
        "(marketing) and not suppressed), as the reference answers; 422 for an id that is not a UUID."
    ),
    HttpApiEndpoint.post("cancel", "/campaigns/:id/cancel", {
      params: IdParam,
      success: Wrapped,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, declared(InvalidCampaignState), ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "SCHEDULED → DRAFT with scheduledFor cleared (editable and sendable again; nothing was sent), as the reference does; " +
        "SENDING → CANCELLED, mail not yet handed to SMTP is not sent. 409 in any other status."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Campaigns", description: "One mail to an audience, now or scheduled (secret key)" }))
{}
