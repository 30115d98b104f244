import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { pageFields, sortedPageQuery, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const TemplateType = Schema.Literals(["TRANSACTIONAL", "MARKETING", "HEADLESS"])

/** What templates and campaigns share: the mail's content and sender. */
export const mailContentFields = {
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  subject: Schema.String,
  body: Schema.String,
  from: Schema.String,
  fromName: Schema.NullOr(Schema.String),
  replyTo: Schema.NullOr(Schema.String),
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
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotate({ identifier: "Template" })

/** Fields are checked by the handler (one place for create and update, with the spec's bare 400 for `from`). */
const TemplateFields = mailContentInput

const IdParam = { id: Text }
const unverifiedDomain = ErrorDocs.forbidden

const Usage = Schema.Struct({
  campaigns: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String })),
  workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, stepId: Schema.String }))
})

export class TemplatesApi extends HttpApiGroup.make("templates")
  .add(
    HttpApiEndpoint.post("create", "/templates", {
      payload: Schema.Struct(TemplateFields),
      success: Template,
      error: [...commonErrors, ErrorDocs.bare, unverifiedDomain, ErrorDocs.validation]
    }).annotate(
      OpenApi.Description,
      "name, subject and body are required; `from` too (bare 400 without), and its domain must be verified for the project (403)."
    ),
    HttpApiEndpoint.get("list", "/templates", {
      query: {
        ...sortedPageQuery("case-insensitive, over name, description and subject"),
        type: Schema.optional(Text).annotate({ description: "TRANSACTIONAL | MARKETING | HEADLESS" })
      },
      success: Schema.Struct(pageFields(Template)),
      error: commonErrors
    }).annotate(OpenApi.Description, "Unrecognised type, sort or dir values fall back to their defaults."),
    HttpApiEndpoint.get("get", "/templates/:id", { params: IdParam, success: Template, error: [...commonErrors, ErrorDocs.notFound] }),
    HttpApiEndpoint.patch("update", "/templates/:id", {
      params: IdParam,
      payload: Schema.Struct(TemplateFields),
      success: Template,
      error: [...commonErrors, ErrorDocs.notFound, unverifiedDomain, ErrorDocs.validation]
    }),
    HttpApiEndpoint.delete("delete", "/templates/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.post("duplicate", "/templates/:id/duplicate", {
      params: IdParam,
      success: Schema.Struct({ id: Schema.String }),
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Copies the template (name suffixed \" (copy)\"); returns the new id."),
    HttpApiEndpoint.get("usage", "/templates/:id/usage", {
      params: IdParam,
      success: Usage,
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Workflow SEND_EMAIL steps that use the template. `campaigns` stays empty: campaigns carry their own content.")
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Templates", description: "Email templates with Liquid placeholders (secret key)" }))
{}
