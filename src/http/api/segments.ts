import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { Contact, Json, PageQuery, pageFields, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const maxLength = (max: number, field: string) =>
  Text.check(Schema.makeFilter((value: string) => value.length <= max, {
    expected: `${field} of at most ${max} characters`,
    code: "too_big"
  } as Schema.Annotations.Filter))

const ConditionTree = Json.annotate({
  description: "Condition tree { logic: AND|OR, groups: [ { filters: [ { field, operator, value?, unit?, within? } ], conditions? } ] }"
})

export const Segment = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  type: Schema.Literals(["DYNAMIC", "STATIC"]),
  condition: Schema.NullOr(Schema.Unknown),
  trackMembership: Schema.Boolean,
  memberCount: Schema.Number,
  projectId: Schema.String,
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotate({ identifier: "Segment" })

const IdParam = { id: Text }
const Emails = Schema.Array(Text)

export class SegmentsApi extends HttpApiGroup.make("segments")
  .add(
    HttpApiEndpoint.post("create", "/segments", {
      payload: Schema.Struct({
        name: maxLength(100, "a name"),
        description: Schema.optional(Schema.NullOr(maxLength(500, "a description"))),
        type: Schema.optional(Schema.Literals(["DYNAMIC", "STATIC"])),
        condition: Schema.optional(ConditionTree),
        trackMembership: Schema.optional(Schema.Boolean)
      }),
      success: Segment.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ErrorDocs.bare, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "DYNAMIC (default) needs a condition (bare 400 without); STATIC ignores it."),
    HttpApiEndpoint.get("list", "/segments", { success: Schema.Array(Segment), error: commonErrors })
      .annotate(OpenApi.Description, "All segments, newest first (not paginated)."),
    HttpApiEndpoint.get("get", "/segments/:id", { params: IdParam, success: Segment, error: [...commonErrors, ErrorDocs.notFound] }),
    HttpApiEndpoint.patch("update", "/segments/:id", {
      params: IdParam,
      payload: Schema.Struct({
        name: Schema.optional(maxLength(100, "a name")),
        description: Schema.optional(Schema.NullOr(maxLength(500, "a description"))),
        condition: Schema.optional(ConditionTree),
        trackMembership: Schema.optional(Schema.Boolean)
      }),
      success: Segment,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }),
    HttpApiEndpoint.delete("delete", "/segments/:id", {
      params: IdParam,
      success: HttpApiSchema.NoContent,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.conflict]
    }),
    HttpApiEndpoint.get("contacts", "/segments/:id/contacts", {
      params: IdParam,
      query: PageQuery,
      success: Schema.Struct(pageFields(Contact)),
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Members; live (the condition evaluated now) for dynamic segments."),
    HttpApiEndpoint.post("addMembers", "/segments/:id/members", {
      params: IdParam,
      payload: Schema.Struct({ emails: Emails, createMissing: Schema.optional(Schema.Boolean), subscribed: Schema.optional(Schema.Boolean) }),
      success: Schema.Struct({ added: Schema.Number, created: Schema.Number, notFound: Schema.Array(Schema.String) }),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Static segments only (422 for dynamic). Emits segment.<slug>.entry when tracked."),
    HttpApiEndpoint.delete("removeMembers", "/segments/:id/members", {
      params: IdParam,
      payload: Schema.Struct({ emails: Emails }),
      success: Schema.Struct({ removed: Schema.Number, notFound: Schema.Array(Schema.String) }),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }),
    HttpApiEndpoint.post("compute", "/segments/:id/compute", {
      params: IdParam,
      success: Schema.Struct({ accepted: Schema.Literal(true), segmentId: Schema.String }).pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Recomputes a dynamic segment's membership (by its project's actor) and emits entry/exit."),
    HttpApiEndpoint.post("refresh", "/segments/:id/refresh", {
      params: IdParam,
      success: Segment,
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Refreshes memberCount only: no events, no membership writes.")
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Segments", description: "Dynamic and static segments (secret key)" }))
{}
