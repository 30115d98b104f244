import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { TemplateInUse } from "../../domain/errors.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { pageParams, QueryParam, queryParameters, sortParams } from "./query.ts"
import { pageFields, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const TYPES = ["TRANSACTIONAL", "MARKETING", "HEADLESS"] as const
const TemplateType = Schema.Literals(TYPES)
const EmailAddress = Schema.String.annotate({ format: "email" } as Schema.Annotations.Documentation<string>)

/** What templates and campaigns share: the mail's content and sender. */
export const mailContentFields = {
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  subject: Schema.String,
  body: Schema.String,
  from: EmailAddress,
  fromName: Schema.NullOr(Schema.String),
  replyTo: Schema.NullOr(EmailAddress),
  type: TemplateType
}

/** The same, each optional, for request bodies checked by the handler. */
export const mailContentInput = {
  name: Schema.optional(Text),
  description: Schema.optional(Schema.NullOr(Text)),
  subject: Schema.optional(Text),
  body: Schema.optional(Text),
  from: Schema.optional(Text),
  fromName: Schema.optional(Schema.NullOr(Text)),
  replyTo: Schema.optional(Schema.NullOr(Text)),
  type: Schema.optional(TemplateType)
}

export const Template = Schema.Struct({
  id: Schema.String,
  ...mailContentFields,
  projectId: Schema.String,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Template" })

/** Fields are checked by the handler (one place for create and update; create answers the LegacyError for a missing one). */
const TemplateFields = mailContentInput

const IdParam = { id: Text }
const ListQuery = queryParameters({
  ...pageParams,
  type: QueryParam.literals(TYPES, "Only templates of this type; unrecognised values list every type"),
  search: QueryParam.text("Case-insensitive, over name, description and subject"),
  ...sortParams(["name", "createdAt", "updatedAt"])
})

const Usage = Schema.Struct({
  campaigns: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String })),
  workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, stepId: Schema.String }))
})

const Preview = Schema.Struct({
  subject: Schema.String.annotate({ description: "The rendered subject (one line)" }),
  html: Schema.String.annotate({ description: "The rendered body, before open and click tracking" }),
  contact: Schema.Struct({ id: Schema.NullOr(Schema.String), email: Schema.String })
}).annotate({ identifier: "TemplatePreview" })

export class TemplatesApi extends HttpApiGroup.make("templates")
  .add(
    HttpApiEndpoint.post("preview", "/templates/preview", {
      payload: Schema.Struct({
        subject: Text.check(Schema.isMaxLength(10_000)),
        body: Text.check(Schema.isMaxLength(1_000_000)),
        contactId: Schema.optional(Text).annotate({ description: "Render for this contact; without it, for a sample contact" })
      }),
      success: Preview,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Renders a subject and body with the renderer mail is sent with, for a contact of the project (its data and " +
        "subscription links) or a sample contact, without saving or sending anything. A template that does not " +
        "parse or render answers 422 with the field's error."
    ),
    HttpApiEndpoint.post("create", "/templates", {
      payload: Schema.Struct(TemplateFields),
      success: Template.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors, ErrorDocs.legacy]
    }).annotate(
      OpenApi.Description,
      "201 with the template. name, subject, body and from are required (a missing one: 400 LegacyError `{ error }`); " +
        "`from`'s domain must be verified for the project (403)."
    ),
    HttpApiEndpoint.get("list", "/templates", {
      query: ListQuery.fields,
      success: Schema.Struct(pageFields(Template)),
      error: [...commonErrors, ...inputErrors]
    }).annotate(OpenApi.Description, "Unrecognised type, sort or dir values fall back to their defaults.")
      .annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.get("get", "/templates/:id", {
      params: IdParam,
      success: Template,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.patch("update", "/templates/:id", {
      params: IdParam,
      payload: Schema.Struct(TemplateFields),
      success: Template,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.delete("delete", "/templates/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, declared(TemplateInUse), ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "409 TEMPLATE_IN_USE while workflow SEND_EMAIL steps send it (details.workflows names them): remove it from them first."
    ),
    HttpApiEndpoint.post("duplicate", "/templates/:id/duplicate", {
      params: IdParam,
      success: Schema.Struct({ id: Schema.String }).pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, 'Copies the template (name suffixed " (Copy)", as the reference names copies); 201 with the new id.'),
    HttpApiEndpoint.get("usage", "/templates/:id/usage", {
      params: IdParam,
      success: Usage,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Workflow SEND_EMAIL steps that use the template. `campaigns` stays empty: campaigns carry their own content."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Templates", description: "Email templates with Liquid placeholders (secret key)" }))
{}
