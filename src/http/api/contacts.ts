import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { DuplicateEmail, InvalidCursor } from "../../domain/errors.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, pageParams, QueryParam, queryParameters } from "./query.ts"
import { Contact, Count, CustomData, Email, pageFields, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const Meta = <const New extends boolean>(isNew: New) =>
  Schema.Struct({ isNew: Schema.Literal(isNew), isUpdate: Schema.Literal(!isNew as boolean) })

const ContactWithMeta = <const New extends boolean>(isNew: New) => Schema.Struct({ ...Contact.fields, _meta: Meta(isNew) })

const FieldParam = { field: Text.annotate({ description: "`email`, `subscribed`, `createdAt`, `updatedAt` or `data.<key>`" }) }
const IdParam = { id: Text }

const FieldUsage = Schema.Struct({
  field: Schema.String,
  segments: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })),
  campaigns: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String })),
  workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
})

const ListQuery = queryParameters({
  ...cursorParams,
  search: QueryParam.text("Case-insensitive substring of the email"),
  subscribed: QueryParam.boolean("Only subscribed (true) or unsubscribed (false) contacts; omit for both (other values: both)"),
  segment: QueryParam.text("Only the current members of this segment (its id; another project's or an unknown id is a 422)", "uuid"),
  field: QueryParam.text("Only contacts that have this custom field, `data.<key>` (`data.a.b` for nested data; another form is a 422)"),
  value: QueryParam.text(
    "With `field`: only contacts whose value of it reads as this text (`pro`, `42`, `true`); a value without a field is a 422"
  ),
  sort: QueryParam.literals(["createdAt", "email"], "Column to sort by; unrecognised values fall back to `createdAt`", "createdAt"),
  dir: QueryParam.literals(["asc", "desc"], "Sort direction; unrecognised values fall back to `desc`", "desc")
})
const PageQuery = queryParameters(pageParams)

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
      error: [...commonErrors, ...bodyErrors, ErrorDocs.legacy]
    }).annotate(
      OpenApi.Description,
      "Upsert by email (case-insensitive): 201 when created, 200 when updated. Without `email`: 400 LegacyError `{ error }`."
    ),
    HttpApiEndpoint.get("list", "/contacts", {
      query: ListQuery.fields,
      success: Schema.Struct({
        data: Schema.Array(Contact),
        cursor: Schema.NullOr(Schema.String),
        hasMore: Schema.Boolean,
        total: Count.annotate({ description: "Filled on the first page (no cursor); 0 on later pages" })
      }),
      error: [...commonErrors, ...inputErrors, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.post("lookup", "/contacts/lookup", {
      payload: Schema.Struct({ emails: Schema.Array(Text) }),
      success: Schema.Struct({
        results: Schema.Array(Schema.Struct({
          email: Schema.String,
          exists: Schema.Boolean,
          contact: Schema.NullOr(Schema.Struct({ id: Schema.String, subscribed: Schema.Boolean }))
        }))
      }),
      error: [...commonErrors, ...bodyErrors]
    }).annotate(OpenApi.Description, "Which of up to 500 emails exist as contacts, in request order."),
    HttpApiEndpoint.get("fields", "/contacts/fields", {
      success: Schema.Struct({
        fields: Schema.Array(Schema.Struct({
          field: Schema.String,
          type: Schema.String,
          isCustom: Schema.Boolean,
          coverage: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })).annotate({
            description: "Share of contacts that have the field"
          })
        }))
      }),
      error: commonErrors
    }),
    HttpApiEndpoint.get("fieldValues", "/contacts/fields/:field/values", {
      params: FieldParam,
      query: PageQuery.fields,
      success: Schema.Struct({ field: Schema.String, ...pageFields(Schema.Unknown) }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Distinct values of a field, sorted, page-paginated.").annotate(OpenApi.Transform, PageQuery.document),
    HttpApiEndpoint.get("fieldUsage", "/contacts/fields/:field/usage", {
      params: FieldParam,
      success: FieldUsage,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.delete("deleteField", "/contacts/fields/:field", {
      params: FieldParam,
      success: Schema.Struct({ field: Schema.String, deleted: Schema.Boolean, contactsUpdated: Count }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Removes a custom field from every contact of the project."),
    HttpApiEndpoint.get("get", "/contacts/:id", {
      params: IdParam,
      success: Contact,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.get("memberships", "/contacts/:id/memberships", {
      params: IdParam,
      success: Schema.Struct({
        segments: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, enteredAt: Timestamp })),
        executions: Schema.Array(Schema.Struct({
          id: Schema.String,
          workflow: Schema.Struct({ id: Schema.String, name: Schema.String }),
          status: Schema.String,
          startedAt: Timestamp,
          finishedAt: Schema.NullOr(Timestamp)
        })).annotate({ description: "Newest first, at most 100" })
      }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "The segments the contact is in now, and its workflow executions."),
    HttpApiEndpoint.patch("update", "/contacts/:id", {
      params: IdParam,
      payload: Schema.Struct({
        email: Schema.optional(Email),
        subscribed: Schema.optional(Schema.Boolean),
        data: Schema.optional(CustomData)
      }),
      success: Contact,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound, declared(DuplicateEmail), ErrorDocs.conflict]
    }),
    HttpApiEndpoint.delete("delete", "/contacts/:id", {
      params: IdParam,
      success: HttpApiSchema.NoContent,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Contacts", description: "Contacts and their custom data (secret key)" }))
{}
