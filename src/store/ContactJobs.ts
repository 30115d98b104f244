/**
 * Contact jobs in Postgres: CSV imports (the uploaded file in parts, its plan and read cursor) and bulk
 * subscribe/unsubscribe/delete. Queuing a job commits, in one transaction, the job and its first stream
 * message(s); the lanes write progress per lane (contact_job_progress), summed here on read.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import type { ImportPlan } from "../domain/imports/plan.ts"
import type { Lanes } from "../stream/lanes.ts"
import { Outbox } from "../stream/Outbox.ts"
import type { BulkMessage, BulkRow, CommandMessage } from "../stream/messages.ts"
import { decodeRows, IdRow, NullableTimestamp, Timestamp } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

const JOB_KINDS = ["import", "subscribe", "unsubscribe", "delete"] as const
export type JobKind = (typeof JOB_KINDS)[number]

/** A job with its lanes' progress summed, as `view` selects it. */
const JobRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(JOB_KINDS),
  total: Schema.Number,
  failure: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  processed: Schema.Number,
  created: Schema.Number,
  updated: Schema.Number,
  skipped: Schema.Number,
  failed: Schema.Number,
  first_at: NullableTimestamp,
  last_at: NullableTimestamp
})

const JobErrorRow = Schema.Struct({
  row: Schema.Number,
  email: Schema.NullOr(Schema.String),
  contact_id: Schema.NullOr(Schema.String),
  reason: Schema.String
})

const EmailRow = Schema.Struct({ email: Schema.String })
export type JobStatus = "PENDING" | "RUNNING" | "COMPLETED" | "FAILED"

export interface JobError {
  readonly row: number
  readonly email?: string
  readonly contactId?: string
  readonly reason: string
}

export interface JobView {
  readonly id: string
  readonly type: JobKind
  readonly status: JobStatus
  readonly progress: {
    readonly processed: number
    readonly total: number
    readonly created: number
    readonly updated: number
    readonly skipped: number
    readonly failed: number
  }
  readonly errors: ReadonlyArray<JobError>
  readonly createdAt: string
  readonly startedAt: string | null
  readonly finishedAt: string | null
}

/** At most this many error rows are kept and shown per job. */
export const MAX_JOB_ERRORS = 100
/** Size of one stored part of an uploaded file. */
export const PART_BYTES = 256 * 1024

/** Ranges of one file read at once (each by its own lane, so possibly on different workers). */
export const IMPORT_READ_AHEAD = 4

/**
 * The stream command that reads range `range` of an import, on lane `range mod L`: queued here for the
 * first ranges, then by each step for a later one (src/actors/importStep.ts).
 */
export const importStepCommand = (
  context: { readonly projectId: string; readonly outbox: { readonly lanes: Lanes } },
  jobId: string,
  range: number
): CommandMessage => ({
  kind: "command" as const,
  projectId: context.projectId,
  commandId: uuidv7(),
  type: "importStep" as const,
  jobId,
  range,
  lane: range % context.outbox.lanes.count
})

/** SQL inserting error rows for a job, keeping about the first MAX_JOB_ERRORS. */
export const insertJobErrors = (sql: SqlClient.SqlClient, jobId: string, errors: ReadonlyArray<JobError>) =>
  errors.length === 0 ? Effect.void : sql`
    INSERT INTO contact_job_errors (job_id, row, email, contact_id, reason)
    SELECT ${jobId}, x.row, x.email, x."contactId", x.reason
    FROM jsonb_to_recordset(${
    JSON.stringify(errors.slice(0, MAX_JOB_ERRORS))
  }::jsonb) AS x(row int, email text, "contactId" text, reason text)
    WHERE (SELECT count(*) FROM contact_job_errors WHERE job_id = ${jobId}) < ${MAX_JOB_ERRORS}
    ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

export interface LaneCounts {
  readonly processed: number
  readonly created?: number
  readonly updated?: number
  readonly skipped?: number
  readonly failed?: number
}

/** SQL adding one lane's counts to a job's progress (run by that lane only, in its transaction), at the Clock's now. */
export const addJobProgress = (sql: SqlClient.SqlClient, jobId: string, lane: number, counts: LaneCounts) =>
  Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
    const now = new Date(nowMs).toISOString()
    return sql`
    INSERT INTO contact_job_progress (job_id, lane, processed, created, updated, skipped, failed, started_at, updated_at)
    VALUES (${jobId}, ${lane}, ${counts.processed}, ${counts.created ?? 0}, ${counts.updated ?? 0}, ${counts.skipped ?? 0},
            ${counts.failed ?? 0}, ${now}::timestamptz, ${now}::timestamptz)
    ON CONFLICT (job_id, lane) DO UPDATE SET
      processed = contact_job_progress.processed + EXCLUDED.processed,
      created = contact_job_progress.created + EXCLUDED.created,
      updated = contact_job_progress.updated + EXCLUDED.updated,
      skipped = contact_job_progress.skipped + EXCLUDED.skipped,
      failed = contact_job_progress.failed + EXCLUDED.failed,
      updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid)
  })

/** An uploaded file's parts, read one query at a time as the reader needs them (outside any transaction). */
const partSource = (sql: SqlClient.SqlClient, jobId: string): AsyncIterable<Uint8Array> => ({
  async *[Symbol.asyncIterator]() {
    for (let part = 0;; part++) {
      const rows = await Effect.runPromise(sql<{ bytes: Uint8Array }>`
        SELECT bytes FROM contact_job_parts WHERE job_id = ${jobId} AND part = ${part}`)
      if (!rows[0]) return
      yield rows[0].bytes
    }
  }
})

export class ContactJobs extends Context.Service<ContactJobs, {
  /** Starts an upload: a job row that stays FAILED ("upload incomplete") until `queueImport`. */
  readonly beginUpload: (projectId: string) => Effect.Effect<string, PersistenceError>
  readonly appendPart: (jobId: string, part: number, bytes: Uint8Array) => Effect.Effect<void, PersistenceError>
  /** The stored file from its start, part by part. */
  readonly parts: (jobId: string) => AsyncIterable<Uint8Array>
  /** Drops an upload that was refused (its parts go with it). */
  readonly discard: (jobId: string) => Effect.Effect<void, PersistenceError>
  /** The file checked out: the job is queued, and its first read step committed to the owner lane. */
  readonly queueImport: (
    projectId: string,
    jobId: string,
    total: number,
    plan: ImportPlan,
    errors: ReadonlyArray<JobError>
  ) => Effect.Effect<void, PersistenceError>
  /**
   * A bulk job over contact ids: ids that are not this project's contacts are reported as not found
   * now; the others go to their lanes, in one message per lane.
   */
  readonly queueBulk: (
    projectId: string,
    kind: Exclude<JobKind, "import">,
    contactIds: ReadonlyArray<string>
  ) => Effect.Effect<string, PersistenceError>
  /** Emails of the project's contacts among these ids. */
  readonly emailsOf: (projectId: string, contactIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, PersistenceError>
  readonly view: (projectId: string, jobId: string, kinds: ReadonlyArray<JobKind>) => Effect.Effect<JobView | undefined, PersistenceError>
}>()("app/store/ContactJobs") {
  static readonly layer = Layer.effect(
    ContactJobs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox

      const beginUpload = Effect.fn("ContactJobs.beginUpload")(function*(projectId: string) {
        const id = uuidv7()
        yield* sql`INSERT INTO contact_jobs (id, project_id, kind, total, failure) VALUES (${id}, ${projectId}, 'import', 0, 'upload incomplete')`
        return id
      }, mapSqlError)

      const appendPart = (jobId: string, part: number, bytes: Uint8Array) =>
        sql`INSERT INTO contact_job_parts (job_id, part, bytes) VALUES (${jobId}, ${part}, ${bytes})`.pipe(Effect.asVoid, mapSqlError)

      const discard = (jobId: string) => sql`DELETE FROM contact_jobs WHERE id = ${jobId}`.pipe(Effect.asVoid, mapSqlError)

      const queueImport = Effect.fn("ContactJobs.queueImport")(function*(
        projectId: string,
        jobId: string,
        total: number,
        plan: ImportPlan,
        errors: ReadonlyArray<JobError>
      ) {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE contact_jobs SET total = ${total}, plan = ${JSON.stringify(plan)}::jsonb, failure = NULL, created_at = now()
                     WHERE id = ${jobId}`
          yield* insertJobErrors(sql, jobId, errors)
          if (plan.ranges.length === 0) return
          yield* sql`INSERT INTO contact_job_ranges (job_id, range) SELECT ${jobId}, generate_series(0, ${plan.ranges.length - 1})`
          // The first ranges' steps, on different lanes (so possibly workers); each step starts a later one.
          const first = Array.from({ length: Math.min(IMPORT_READ_AHEAD, plan.ranges.length) }, (_, range) => range)
          yield* outbox.append(first.map((range) => importStepCommand({ projectId, outbox }, jobId, range)))
        }))
      }, mapSqlError)

      const queueBulk = Effect.fn("ContactJobs.queueBulk")(function*(
        projectId: string,
        kind: Exclude<JobKind, "import">,
        contactIds: ReadonlyArray<string>
      ) {
        const id = uuidv7()
        const at = new Date(yield* Clock.currentTimeMillis).toISOString()
        const wellFormed = [...new Set(contactIds.filter(isUuid).map((value) => value.toLowerCase()))]
        return yield* sql.withTransaction(Effect.gen(function*() {
          const own = new Set(
            wellFormed.length === 0 ? [] : (yield* decodeRows(IdRow)(sql`
              SELECT id FROM contacts WHERE project_id = ${projectId} AND id = ANY(${`{${wellFormed.join(",")}}`}::uuid[])`))
              .map((row) => row.id)
          )
          const byLane = new Map<number, Array<BulkRow>>()
          const errors: Array<JobError> = []
          const seen = new Set<string>()
          for (const [index, raw] of contactIds.entries()) {
            const contactId = raw.toLowerCase()
            if (!own.has(contactId)) errors.push({ row: index + 1, contactId: raw, reason: "contact not found" })
            else if (seen.has(contactId)) errors.push({ row: index + 1, contactId: raw, reason: "duplicate contact id in the request" })
            else {
              seen.add(contactId)
              const lane = outbox.lanes.laneOf(contactId)
              let rows = byLane.get(lane)
              if (!rows) byLane.set(lane, rows = [])
              rows.push({ row: index + 1, contactId })
            }
          }
          yield* sql`INSERT INTO contact_jobs (id, project_id, kind, total, created_at, started_at)
                     VALUES (${id}, ${projectId}, ${kind}, ${contactIds.length}, ${at}::timestamptz, ${at}::timestamptz)`
          if (errors.length > 0) {
            yield* insertJobErrors(sql, id, errors)
            yield* addJobProgress(sql, id, -1, { processed: errors.length, skipped: errors.length })
          }
          const messages: Array<BulkMessage> = [...byLane].map(([lane, rows]) => ({
            kind: "bulk",
            projectId,
            jobId: id,
            op: kind,
            lane,
            at,
            rows
          }))
          yield* outbox.append(messages)
          return id
        }))
      }, mapSqlError)

      const view = Effect.fn("ContactJobs.view")(function*(projectId: string, jobId: string, kinds: ReadonlyArray<JobKind>) {
        if (!isUuid(jobId)) return undefined
        const [job] = yield* decodeRows(JobRow)(sql`
          SELECT j.id, j.kind, j.total, j.failure, j.created_at, j.started_at,
                 COALESCE(sum(p.processed), 0)::int AS processed, COALESCE(sum(p.created), 0)::int AS created,
                 COALESCE(sum(p.updated), 0)::int AS updated, COALESCE(sum(p.skipped), 0)::int AS skipped,
                 COALESCE(sum(p.failed), 0)::int AS failed, max(p.updated_at) AS last_at,
                 LEAST(min(p.started_at), (SELECT min(r.read_at) FROM contact_job_ranges r WHERE r.job_id = j.id)) AS first_at
          FROM contact_jobs j LEFT JOIN contact_job_progress p ON p.job_id = j.id
          WHERE j.id = ${jobId} AND j.project_id = ${projectId} AND j.kind = ANY(${`{${kinds.join(",")}}`}::text[])
          GROUP BY j.id`)
        if (!job || job.failure === "upload incomplete") return undefined
        const errors = yield* decodeRows(JobErrorRow)(sql`
          SELECT row, email, contact_id, reason FROM contact_job_errors WHERE job_id = ${jobId} ORDER BY row LIMIT ${MAX_JOB_ERRORS}`)
        const completed = job.processed >= job.total
        // Two last ranges read at once may both have left the file: drop it now.
        if (completed && job.kind === "import") yield* sql`DELETE FROM contact_job_parts WHERE job_id = ${jobId}`
        const status: JobStatus = job.failure !== null
          ? "FAILED"
          : completed
          ? "COMPLETED"
          : job.started_at !== null || job.first_at !== null
          ? "RUNNING"
          : "PENDING"
        return {
          id: job.id,
          type: job.kind,
          status,
          progress: {
            processed: job.processed,
            total: job.total,
            created: job.created,
            updated: job.updated,
            skipped: job.skipped,
            failed: job.failed
          },
          errors: errors.map((row) => ({
            row: row.row,
            ...(row.email === null ? {} : { email: row.email }),
            ...(row.contact_id === null ? {} : { contactId: row.contact_id }),
            reason: row.reason
          })),
          createdAt: job.created_at,
          startedAt: job.started_at ?? job.first_at,
          finishedAt: completed ? job.last_at ?? job.created_at : null
        }
      }, mapSqlError)

      const emailsOf = (projectId: string, contactIds: ReadonlyArray<string>) => {
        const ids = contactIds.filter(isUuid)
        return ids.length === 0
          ? Effect.succeed([])
          : Effect.map(
            decodeRows(EmailRow)(
              sql`SELECT email FROM contacts WHERE project_id = ${projectId} AND id = ANY(${`{${ids.join(",")}}`}::uuid[])`
            ),
            (rows) => rows.map((row) => row.email)
          ).pipe(mapSqlError)
      }

      return ContactJobs.of({
        beginUpload,
        appendPart,
        parts: (jobId) => partSource(sql, jobId),
        discard,
        queueImport,
        queueBulk,
        emailsOf,
        view
      })
    })
  )
}
