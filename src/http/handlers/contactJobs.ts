/** Handlers of the contactJobs group: CSV import and export, bulk jobs and their status. */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { isUuid } from "../../domain/ids.ts"
import { exportContacts } from "../../imports/export.ts"
import { receiveImport, type UploadProblem } from "../../imports/upload.ts"
import { ContactDirectory } from "../../ingest/ContactDirectory.ts"
import { ContactJobs, type JobKind } from "../../store/ContactJobs.ts"
import { Segments } from "../../store/Segments.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { MAX_BULK_IDS, MAX_IMPORT_BYTES } from "../api/contactJobs.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { BadRequest, NotFound, PayloadTooLarge, ValidationFailed } from "../api/statusErrors.ts"

const uploadError = (problem: UploadProblem): PayloadTooLarge | BadRequest | ValidationFailed => {
  switch (problem._tag) {
    case "TooLarge":
      return PayloadTooLarge.of(`The file exceeds ${MAX_IMPORT_BYTES / 1024 / 1024} MB`)
    case "Unreadable":
      return BadRequest.of(problem.message)
    case "Invalid":
      return ValidationFailed.field(problem.field, problem.message, "invalid_value")
  }
}

export const ContactJobsHandlers = HttpApiBuilder.group(
  Api,
  "contactJobs",
  Effect.fnUntraced(function*(handlers) {
    const jobs = yield* ContactJobs
    const sql = yield* SqlClient.SqlClient
    const relay = yield* OutboxRelay
    const segments = yield* Segments
    const directory = yield* ContactDirectory

    const status = (jobId: string, kinds: ReadonlyArray<JobKind>, what: string) =>
      rendered(Effect.gen(function*() {
        const project = yield* CurrentProject
        const job = yield* jobs.view(project.id, jobId, kinds)
        return job ?? (yield* NotFound.of(what))
      }))

    const bulk = (kind: Exclude<JobKind, "import">, contactIds: ReadonlyArray<string>) =>
      rendered(Effect.gen(function*() {
        const project = yield* CurrentProject
        if (contactIds.length === 0 || contactIds.length > MAX_BULK_IDS) {
          return yield* ValidationFailed.field("contactIds", `1 to ${MAX_BULK_IDS} contact ids`, "too_big", contactIds.length)
        }
        const jobId = yield* jobs.queueBulk(project.id, kind, contactIds)
        if (kind === "delete") {
          // The api caches email → id for /v1/track: ids about to be deleted must not be served from it.
          const gone = yield* jobs.emailsOf(project.id, contactIds)
          yield* Effect.forEach(gone, (email) => directory.forget(project.id, email), { discard: true })
        }
        yield* relay.wake
        return { jobId }
      }))

    return handlers
      .handleRaw("import", ({ request }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const jobId = yield* receiveImport(project.id, request.multipartStream).pipe(
            Effect.provideService(ContactJobs, jobs),
            // The repository's PersistenceError: the logged 500 (its cause, as `rendered` has it).
            Effect.catchTag("PersistenceError", (error) => Effect.die(error.cause)),
            Effect.mapError(uploadError)
          )
          yield* relay.wake
          return { jobId }
        })))
      .handle("importStatus", ({ params }) => status(params.jobId, ["import"], "Import job"))
      .handle("export", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          let members = undefined
          if (query.segmentId !== undefined && query.segmentId !== "") {
            const segment = isUuid(query.segmentId) ? yield* segments.get(project.id, query.segmentId) : undefined
            if (!segment) return yield* NotFound.of("Segment")
            members = segments.membersSql(segment)
          }
          const body = yield* exportContacts(project.id, members).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          return HttpServerResponse.stream(body, {
            contentType: "text/csv; charset=utf-8",
            headers: { "content-disposition": 'attachment; filename="contacts.csv"' }
          })
        })))
      .handle("bulkSubscribe", ({ payload }) => bulk("subscribe", payload.contactIds))
      .handle("bulkUnsubscribe", ({ payload }) => bulk("unsubscribe", payload.contactIds))
      .handle("bulkDelete", ({ payload }) => bulk("delete", payload.contactIds))
      .handle("bulkStatus", ({ params }) => status(params.jobId, ["subscribe", "unsubscribe", "delete"], "Bulk job"))
  })
)
