import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { bodyErrors, commonErrors, ErrorDocs, inputErrors } from "./errors.ts"
import { pageParams, queryParameters } from "./query.ts"
import { Contact, Count, Json, pageFields, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const maxLength = (max: number, field: string) =>
  Text.check(Schema.makeFilter((value: string) => value.length <= max, {
    expected: `${field} of at most ${max} characters`,
    code: "too_big"
  } as Schema.Annotations.Filter))

const ConditionTree = Json.annotate({
  description: "Condition tree { logic: AND|OR, groups: [ { filters: [ { field, operator, value?, unit?, within? } ], conditions? } ] }. " +
    "Event operators take `event.<name>` or the bare event name (stored and shown as `event.<name>`)."
})

export const Segment = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  type: Schema.Literals(["DYNAMIC", "STATIC"]),
  condition: Schema.NullOr(Schema.Unknown).annotate({
    description: "The DYNAMIC segment's condition tree (event filters as event.<name>); null for STATIC"
  }),
  trackMembership: Schema.Boolean,
  memberCount: Count,
  projectId: Schema.String,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Segment" })

const IdParam = { id: Text }
const Emails = Schema.Array(Text)
const PageQuery = queryParameters(pageParams)

export class SegmentsApi extends HttpApiGroup.make("segments")
  .add(
    HttpApiEndpoint.post("create", "/segments", {
      payload: Schema.Struct({
        name: Schema.optional(maxLength(100, "a name")),
        description: Schema.optional(Schema.NullOr(maxLength(500, "a description"))),
        type: Schema.optional(Schema.Literals(["DYNAMIC", "STATIC"])),
        condition: Schema.optional(ConditionTree),
        trackMembership: Schema.optional(Schema.Boolean)
      }),
      success: Segment.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.legacy]
    }).annotate(
      OpenApi.Description,
      "201 with the segment. `name` is required, and DYNAMIC (the default) needs a condition object (a missing one: " +
        "400 LegacyError `{ error }`); STATIC ignores it."
    ),
    HttpApiEndpoint.post("preview", "/segments/preview", {
      payload: Schema.Struct({
        condition: Schema.optional(ConditionTree),
        segmentId: Schema.optional(Text),
        sampleSize: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 50 })))
      }),
      success: Schema.Struct({
        total: Count.annotate({ description: "Contacts that match now" }),
        reachable: Count.annotate({ description: "Of those, the ones a marketing campaign would mail: subscribed and not suppressed" }),
        sample: Schema.Array(Contact).annotate({ description: "Up to sampleSize (default 10) of them, newest first" })
      }),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Counts and samples, without saving anything, the contacts a condition matches now (`condition`, checked as a " +
        "segment's: 422 with the offending node's path), a segment's current members (`segmentId`), or every contact " +
        "(neither): what a segment being edited or a campaign audience would hold."
    ),
    HttpApiEndpoint.get("list", "/segments", { success: Schema.Array(Segment), error: commonErrors })
      .annotate(OpenApi.Description, "All segments, newest first (not paginated)."),
    HttpApiEndpoint.get("get", "/segments/:id", {
      params: IdParam,
      success: Segment,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.patch("update", "/segments/:id", {
      params: IdParam,
      payload: Schema.Struct({
        name: Schema.optional(maxLength(100, "a name")),
        description: Schema.optional(Schema.NullOr(maxLength(500, "a description"))),
        condition: Schema.optional(ConditionTree),
        trackMembership: Schema.optional(Schema.Boolean)
      }),
      success: Segment,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.delete("delete", "/segments/:id", {
      params: IdParam,
      success: HttpApiSchema.NoContent,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, ErrorDocs.conflict]
    }),
    HttpApiEndpoint.get("contacts", "/segments/:id/contacts", {
      params: IdParam,
      query: PageQuery.fields,
      success: Schema.Struct(pageFields(Contact)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Members; live (the condition evaluated now) for dynamic segments.")
      .annotate(OpenApi.Transform, PageQuery.document),
    HttpApiEndpoint.post("addMembers", "/segments/:id/members", {
      params: IdParam,
      payload: Schema.Struct({
        emails: Emails,
        createMissing: Schema.optional(Schema.Boolean),
        subscribed: Schema.optional(Schema.Boolean)
      }),
      success: Schema.Struct({ added: Count, created: Count, notFound: Schema.Array(Schema.String) }),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Static segments only (422 for dynamic). Emits segment.<slug>.entry when tracked."),
    HttpApiEndpoint.delete("removeMembers", "/segments/:id/members", {
      params: IdParam,
      payload: Schema.Struct({ emails: Emails }),
      success: Schema.Struct({ removed: Count, notFound: Schema.Array(Schema.String) }),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.post("compute", "/segments/:id/compute", {
      params: IdParam,
      success: Schema.Struct({ accepted: Schema.Literal(true), segmentId: Schema.String }).pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Recomputes a dynamic segment's membership (by its project's actor) and emits entry/exit."),
    HttpApiEndpoint.post("refresh", "/segments/:id/refresh", {
      params: IdParam,
      success: Segment,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Refreshes memberCount only: no events, no membership writes.")
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Segments", description: "Dynamic and static segments (secret key)" }))
{}
