import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { Contact, CustomData, Email, PageQuery, pageFields, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const Meta = <const New extends boolean>(isNew: New) =>
  Schema.Struct({ isNew: Schema.Literal(isNew), isUpdate: Schema.Literal(!isNew as boolean) })

const ContactWithMeta = <const New extends boolean>(isNew: New) =>
  Schema.Struct({ ...Contact.fields, _meta: Meta(isNew) })

const FieldParam = { field: Text.annotate({ description: "`email`, `subscribed`, `createdAt`, `updatedAt` or `data.<key>`" }) }
const IdParam = { id: Text }

const FieldUsage = Schema.Struct({
  field: Schema.String,
  segments: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })),
  campaigns: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String })),
  workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
})

const optionalString = (description: string) => Schema.optional(Text).annotate({ description })

export class ContactsApi extends HttpApiGroup.make("contacts", { topLevel: false })
  .add(
    HttpApiEndpoint.post("upsert", "/contacts", {
      payload: Schema.Struct({
        email: Schema.optional(Email),
        subscribed: Schema.optional(Schema.Boolean),
        data: Schema.optional(CustomData)
      }),
      success: [
        ContactWithMeta(true).pipe(HttpApiSchema.status(201)),
        ContactWithMeta(false)
      ],
      error: [...commonErrors, ErrorDocs.bare, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Upsert by email (case-insensitive): 201 when created, 200 when updated."),
    HttpApiEndpoint.get("list", "/contacts", {
      query: {
        limit: optionalString("1..100, default 20 (larger values are clamped)"),
        cursor: optionalString("`cursor` of the previous page"),
        search: optionalString("case-insensitive substring of the email"),
        subscribed: optionalString("`true` or `false`; omit for both"),
        sort: optionalString("`createdAt` (default) or `email`"),
        dir: optionalString("`asc` or `desc` (default)")
      },
      success: Schema.Struct({
        data: Schema.Array(Contact),
        cursor: Schema.NullOr(Schema.String),
        hasMore: Schema.Boolean,
        total: Schema.Number
      }),
      error: [...commonErrors, ErrorDocs.badRequest]
    }),
    HttpApiEndpoint.post("lookup", "/contacts/lookup", {
      payload: Schema.Struct({ emails: Schema.Array(Text) }),
      success: Schema.Struct({
        results: Schema.Array(Schema.Struct({
          email: Schema.String,
          exists: Schema.Boolean,
          contact: Schema.NullOr(Schema.Struct({ id: Schema.String, subscribed: Schema.Boolean }))
        }))
      }),
      error: [...commonErrors, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Which of up to 500 emails exist as contacts, in request order."),
    HttpApiEndpoint.get("fields", "/contacts/fields", {
      success: Schema.Struct({
        fields: Schema.Array(Schema.Struct({
          field: Schema.String,
          type: Schema.String,
          isCustom: Schema.Boolean,
          coverage: Schema.Number
        }))
      }),
      error: commonErrors
    }),
    HttpApiEndpoint.get("fieldValues", "/contacts/fields/:field/values", {
      params: FieldParam,
      query: PageQuery,
      success: Schema.Struct({ field: Schema.String, ...pageFields(Schema.Unknown) }),
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Distinct values of a field, sorted, page-paginated."),
    HttpApiEndpoint.get("fieldUsage", "/contacts/fields/:field/usage", {
      params: FieldParam,
      success: FieldUsage,
      error: [...commonErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.delete("deleteField", "/contacts/fields/:field", {
      params: FieldParam,
      success: Schema.Struct({ field: Schema.String, deleted: Schema.Boolean, contactsUpdated: Schema.Number }),
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }).annotate(OpenApi.Description, "Removes a custom field from every contact of the project."),
    HttpApiEndpoint.get("get", "/contacts/:id", {
      params: IdParam,
      success: Contact,
      error: [...commonErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.patch("update", "/contacts/:id", {
      params: IdParam,
      payload: Schema.Struct({
        email: Schema.optional(Email),
        subscribed: Schema.optional(Schema.Boolean),
        data: Schema.optional(CustomData)
      }),
      success: Contact,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.conflict, ErrorDocs.validation]
    }),
    HttpApiEndpoint.delete("delete", "/contacts/:id", {
      params: IdParam,
      success: HttpApiSchema.NoContent,
      error: [...commonErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Contacts", description: "Contacts and their custom data (secret key)" }))
{}
