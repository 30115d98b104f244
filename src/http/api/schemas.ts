/** Request and response schemas shared by several groups. */
import { Schema, SchemaIssue } from "effect"
import { isValidEmail, MAX_EMAIL_LENGTH } from "../../domain/email.ts"
import { MAX_JSON_DEPTH, storableProblem } from "../../domain/storable.ts"

/**
 * The one rule every request value goes through (domain/storable.ts): no NUL, no unpaired surrogates,
 * JSON at most MAX_JSON_DEPTH levels deep, no `__proto__` key. A failure names the offending path.
 */
export const storable = Schema.makeFilter<unknown>((value) => {
  const problem = storableProblem(value)
  if (!problem) return undefined
  const reason = new SchemaIssue.InvalidValue({ message: problem.message, code: problem.code } as Schema.Annotations.Issue)
  return problem.path.length === 0 ? reason : new SchemaIssue.Pointer(problem.path, reason)
}, {
  expected: "text without NUL (\\u0000) or unpaired UTF-16 surrogates",
  code: "invalid_string",
  // Nothing JSON Schema can say; declaring it keeps the annotations of the schemas built on it in the OpenAPI document.
  toJsonSchema: () => ({})
} as Schema.Annotations.Filter, true)

/** Every string a request carries: bodies, query strings, path parameters, headers. */
export const Text = Schema.String.check(storable)

/** JSON of any shape (step configs, condition trees). */
export const Json = Schema.Unknown.check(storable).annotate({
  description: `Any JSON, nested at most ${MAX_JSON_DEPTH} levels; strings without NUL or unpaired surrogates; no __proto__ key`
})

/** A JSON object (execution context). */
export const JsonObject = Schema.Record(Schema.String, Schema.Unknown).check(storable)

/** String keys and values (custom mail headers). */
export const TextRecord = Schema.Record(Schema.String, Schema.String).check(storable)

export const Email = Text.check(
  Schema.makeFilter((value: string) => isValidEmail(value.trim()), {
    expected: `a valid email address (at most ${MAX_EMAIL_LENGTH} characters)`,
    code: "invalid_string"
  } as Schema.Annotations.Filter)
).annotate({ format: "email" } as Schema.Annotations.Documentation<string>)

/** Custom data: see the custom-data rules (patch, null deletes, "" ignored, { value, persistent:false }). */
export const CustomData = JsonObject.annotate({
  description: 'Custom fields (patch): primitives and objects are stored, null deletes a key, "" is ignored, ' +
    "{ value, persistent: false } is used for this call only; reserved keys are dropped. At most " +
    `${MAX_JSON_DEPTH} levels deep; strings and keys without NUL or unpaired surrogates; the key __proto__ is refused.`
})

/** An ISO 8601 instant in a response. */
export const Timestamp = Schema.String.annotate({ format: "date-time" } as Schema.Annotations.Documentation<string>)

export const Contact = Schema.Struct({
  id: Schema.String,
  email: Schema.String.annotate({ format: "email" } as Schema.Annotations.Documentation<string>),
  subscribed: Schema.Boolean,
  snoozedUntil: Schema.NullOr(Timestamp),
  data: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Contact" })

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Text).annotate({
    description: "1..255 printable ASCII characters; a repeat within the expiry answers 409 IDEMPOTENCY_KEY_REUSED " +
      "(details.inProgress true while the first request runs; otherwise details.originalResponse is its answer)"
  })
})

/** A count: a whole number, never negative. */
export const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

export const pageFields = <S extends Schema.Top>(item: S) => ({
  data: Schema.Array(item),
  page: Count,
  pageSize: Count,
  total: Count,
  totalPages: Count
})
