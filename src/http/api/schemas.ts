/** Request and response schemas shared by several groups. */
import { Schema } from "effect"
import { isValidEmail, MAX_EMAIL_LENGTH } from "../../domain/email.ts"

export const Email = Schema.String.check(
  Schema.makeFilter((value: string) => isValidEmail(value.trim()), {
    expected: `a valid email address (at most ${MAX_EMAIL_LENGTH} characters)`,
    code: "invalid_string"
  } as Schema.Annotations.Filter)
).annotate({ format: "email" } as Schema.Annotations.Documentation<string>)

/** Custom data: see the custom-data rules (patch, null deletes, "" ignored, { value, persistent:false }). */
export const CustomData = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description:
    "Custom fields (patch): primitives and objects are stored, null deletes a key, \"\" is ignored, " +
    "{ value, persistent: false } is used for this call only; reserved keys are dropped."
})

export const Contact = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  subscribed: Schema.Boolean,
  snoozedUntil: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotate({ identifier: "Contact" })

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String).annotate({
    description: "1..255 printable ASCII characters; a repeat within the expiry answers 409 IDEMPOTENCY_KEY_REUSED " +
      "(details.inProgress true while the first request runs; otherwise details.originalResponse is its answer)"
  })
})

/** Page-paginated lists (conventions item 5): `page` 1-based, default 1; `pageSize` default 20, at most 100. */
export const PageQuery = {
  page: Schema.optional(Schema.String).annotate({ description: "1-based, default 1" }),
  pageSize: Schema.optional(Schema.String).annotate({ description: "default 20, at most 100" })
}

/** Page-paginated lists that can also be searched and sorted (templates, campaigns). */
export const sortedPageQuery = (searchDescription: string) => ({
  ...PageQuery,
  search: Schema.optional(Schema.String).annotate({ description: searchDescription }),
  sort: Schema.optional(Schema.String).annotate({ description: "name | createdAt (default) | updatedAt" }),
  dir: Schema.optional(Schema.String).annotate({ description: "asc | desc (default)" })
})

export const pageFields = <S extends Schema.Top>(item: S) => ({
  data: Schema.Array(item),
  page: Schema.Number,
  pageSize: Schema.Number,
  total: Schema.Number,
  totalPages: Schema.Number
})
