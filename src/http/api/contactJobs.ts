import { Schema } from "effect"
import { Multipart } from "effect/http"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { bodyErrors, commonErrors, ErrorDocs, inputErrors } from "./errors.ts"
import { QueryParam, queryParameters } from "./query.ts"
import { Count, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

/** At most this many bytes of CSV per import. */
export { MAX_IMPORT_BYTES } from "../../domain/imports/plan.ts"
/** At most this many contact ids per bulk call. */
export const MAX_BULK_IDS = 1_000

const JobAccepted = Schema.Struct({ jobId: Schema.String }).pipe(HttpApiSchema.status(202))

export const Job = Schema.Struct({
  id: Schema.String,
  type: Schema.Literals(["import", "subscribe", "unsubscribe", "delete"]),
  status: Schema.Literals(["PENDING", "RUNNING", "COMPLETED", "FAILED"]),
  progress: Schema.Struct({
    processed: Count.annotate({ description: "Rows accounted for (created + updated + skipped + failed)" }),
    total: Count,
    created: Count,
    updated: Count,
    skipped: Count.annotate({ description: "Bad rows (invalid email, duplicate in the file, …) or ids not found" }),
    failed: Count.annotate({ description: "Rows that could not be applied (the contact was deleted meanwhile, its data limit)" })
  }),
  errors: Schema.Array(Schema.Struct({
    row: Count.annotate({ description: "The file's row (header = 1), or the id's 1-based position in contactIds" }),
    email: Schema.optional(Schema.String),
    contactId: Schema.optional(Schema.String),
    reason: Schema.String
  })).annotate({ description: "The first 100 rows reported, by row" }),
  createdAt: Schema.String,
  startedAt: Schema.NullOr(Schema.String),
  finishedAt: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ContactJob" })

const JobParam = { jobId: Text }

const BulkPayload = Schema.Struct({
  contactIds: Schema.Array(Text).annotate({ description: `1 to ${MAX_BULK_IDS} contact ids` })
})

const bulk = <const Name extends string, const Path extends `/${string}`>(name: Name, path: Path, what: string) =>
  HttpApiEndpoint.post(name, path, {
    payload: BulkPayload,
    success: JobAccepted,
    error: [...commonErrors, ...bodyErrors]
  }).annotate(
    OpenApi.Description,
    `Queues ${what} for up to ${MAX_BULK_IDS} contacts; each is applied by the contact's lane, in order with its other ` +
      "changes. Ids that are not the project's contacts are reported as not found (never touched). Poll GET /contacts/bulk/:jobId."
  )

const ExportQuery = queryParameters({
  segmentId: QueryParam.text("Only the segment's current members", "uuid")
})

export class ContactJobsApi extends HttpApiGroup.make("contactJobs", { topLevel: false })
  .add(
    HttpApiEndpoint.post("import", "/contacts/import", {
      payload: Schema.Struct({
        file: Multipart.SingleFileSchema.annotate({ description: "The CSV file (at most 5 MB)" }),
        subscribed: Schema.optional(Schema.String).annotate({ description: "true/false: the subscription of rows without one" }),
        mapping: Schema.optional(Schema.String).annotate({ description: 'JSON: { "<column>": "<key>" | "ignore" }' })
      }).pipe(HttpApiSchema.asMultipart()),
      success: JobAccepted,
      error: [...commonErrors, ...bodyErrors]
    }).annotate(
      OpenApi.Description,
      "Multipart upload of one CSV file (field `file`, at most 5 MB: 413 over it; 422 with the reason for a file that is " +
        "not CSV text or has no email column). Delimiter `,` `;` or tab (detected), UTF-8 with or without BOM, quoted fields, " +
        "CRLF. The header names the columns: `email` (or `Email Address`), `subscribed` (true/false, yes/no, 1/0), every " +
        "other column a custom data key named by its header in lower case, words one space apart (`First Name` is the key " +
        '`first name`; a header written as a JSON string literal, `"First Name"`, or a key given in `mapping` is taken ' +
        "exactly). Types are inferred; empty cells leave a field unchanged; `createdAt`/`updatedAt` are ignored. " +
        "Answers 202 `{ jobId }` at once; poll GET /contacts/import/:jobId."
    ),
    HttpApiEndpoint.get("importStatus", "/contacts/import/:jobId", {
      params: JobParam,
      success: Job,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.get("export", "/contacts/export", {
      query: ExportQuery.fields,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" })),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Streams every contact (or a segment's members) as CSV: `email`, `subscribed`, `createdAt` and one column per custom " +
        "field; cells a spreadsheet would run as formulas are escaped (`'=`). Importing the file back reproduces the contacts."
    ).annotate(OpenApi.Transform, ExportQuery.document),
    bulk("bulkSubscribe", "/contacts/bulk-subscribe", "a subscribe"),
    bulk("bulkUnsubscribe", "/contacts/bulk-unsubscribe", "an unsubscribe"),
    bulk("bulkDelete", "/contacts/bulk-delete", "a delete (segments exited with events, workflow executions cancelled)"),
    HttpApiEndpoint.get("bulkStatus", "/contacts/bulk/:jobId", {
      params: JobParam,
      success: Job,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(
    OpenApi.annotations({ title: "Contact jobs", description: "CSV import and export, bulk subscribe/unsubscribe/delete (secret key)" })
  )
{}
