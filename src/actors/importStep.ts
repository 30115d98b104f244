/**
 * One read step of a CSV import, run by the project's owner lane inside its batch transaction (one
 * `importStep` command each): the next chunk of rows is read from the stored file, bad rows are
 * reported, contacts new to the project are created with their row's data, and every row goes to its
 * contact's lane as a `bulk` message, to be applied there in order with that lane's live traffic. The
 * job's cursor and the next step's command commit with them, so a worker killed mid-import resumes at
 * the cursor and no row is handed over twice.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { inferFieldTypes } from "../domain/customData.ts"
import { uuidv7 } from "../domain/ids.ts"
import { type ImportPlan, readRow } from "../imports/plan.ts"
import { ImportReader } from "../imports/reader.ts"
import { pgArray } from "../lib/pgArray.ts"
import { addJobProgress, insertJobErrors, type JobError, partSource } from "../store/ContactJobs.ts"
import type { Outbox } from "../stream/Outbox.ts"
import type { BulkMessage, BulkRow } from "../stream/messages.ts"

/** Rows per step, and cell text per step: bounds a step's transaction and its lane messages. */
export const IMPORT_CHUNK_ROWS = 10_000
const IMPORT_CHUNK_CHARS = 2 * 1024 * 1024

export interface ImportStepContext {
  readonly projectId: string
  readonly outbox: Outbox["Service"]
  /** The owner lane's open readers, by job id (kept between steps: reopening rereads the file). */
  readonly readers: Map<string, ImportReader>
}

interface Pending {
  readonly row: number
  readonly email: string
  readonly subscribed: boolean | null
  readonly set: Record<string, unknown>
}

export const importStep = Effect.fnUntraced(function*(context: ImportStepContext, jobId: string) {
  const sql = yield* SqlClient.SqlClient
  const [job] = yield* sql<{ total: number; cursor: number; plan: ImportPlan; created_at: Date; failure: string | null }>`
    SELECT total, cursor, plan, created_at, failure FROM contact_jobs
    WHERE id = ${jobId} AND project_id = ${context.projectId} AND kind = 'import' FOR UPDATE`
  if (!job || job.failure !== null || job.cursor >= job.total) return { handedOver: 0, continued: false }

  // The file was checked at upload; one that no longer reads (a parser upgrade, a damaged part) fails
  // the job with the reason rather than failing the lane's batch over and over.
  const unreadable = (error: unknown) =>
    Effect.as(
      sql`UPDATE contact_jobs SET failure = ${`the file could not be read: ${error instanceof Error ? error.message : String(error)}`}
          WHERE id = ${jobId}`,
      { handedOver: 0, continued: false }
    )
  let reader = context.readers.get(jobId)
  if (!reader || reader.position !== job.cursor) {
    // First step on this worker, or a step rolled back after reading: reopen at the committed cursor.
    yield* Effect.promise(() => reader?.close() ?? Promise.resolve())
    context.readers.delete(jobId)
    const opened = yield* Effect.tryPromise(() => ImportReader.open(partSource(sql, jobId), job.plan, job.cursor)).pipe(Effect.result)
    if (opened._tag === "Failure") return yield* unreadable(opened.failure.cause)
    reader = opened.success
    context.readers.set(jobId, reader)
  }
  const open = reader
  const taken = yield* Effect.tryPromise(() => open.take(IMPORT_CHUNK_ROWS, IMPORT_CHUNK_CHARS)).pipe(Effect.result)
  if (taken._tag === "Failure") {
    context.readers.delete(jobId)
    return yield* unreadable(taken.failure.cause)
  }
  const records = taken.success
  const errors: Array<JobError> = []
  const valid: Array<Pending> = []
  for (const { row, record } of records) {
    const outcome = readRow(job.plan, record)
    if (outcome._tag === "bad") {
      errors.push({ row, ...(outcome.email ? { email: outcome.email } : {}), reason: outcome.reason })
      continue
    }
    const last = job.plan.duplicates?.[row]
    if (last !== undefined) {
      errors.push({ row, email: outcome.email, reason: `duplicate email in the file: row ${last} has it too, and the last row wins` })
      continue
    }
    valid.push({ row, email: outcome.email, subscribed: outcome.subscribed, set: outcome.set })
  }

  const resolved = yield* createOrFind(context.projectId, job.plan, valid)
  const at = new Date(job.created_at).toISOString()
  const byLane = new Map<number, Array<BulkRow>>()
  for (const pending of valid) {
    const contact = resolved.get(pending.email)!
    const lane = context.outbox.lanes.laneOf(contact.id)
    let rows = byLane.get(lane)
    if (!rows) byLane.set(lane, rows = [])
    rows.push(contact.created
      ? { row: pending.row, contactId: contact.id, created: true }
      : { row: pending.row, contactId: contact.id, subscribed: pending.subscribed, set: pending.set })
  }
  const messages: Array<BulkMessage> = [...byLane].map(([lane, rows]) => ({
    kind: "bulk",
    projectId: context.projectId,
    jobId,
    op: "import",
    lane,
    at,
    rows
  }))
  const cursor = job.cursor + records.length
  // A file that ends before the count taken at upload (it cannot, but never loop forever) ends the job there.
  const total = records.length === 0 ? cursor : job.total
  const continued = cursor < total
  yield* context.outbox.append(continued
    ? [...messages, { kind: "command", projectId: context.projectId, commandId: uuidv7(), type: "importStep", jobId }]
    : messages)
  yield* sql`UPDATE contact_jobs SET cursor = ${cursor}, total = ${total}, started_at = COALESCE(started_at, now()) WHERE id = ${jobId}`
  if (errors.length > 0) {
    yield* insertJobErrors(sql, jobId, errors)
    yield* addJobProgress(sql, jobId, -1, { processed: errors.length, skipped: errors.length })
  }
  if (!continued) {
    // Fully read: the file is no longer needed.
    yield* sql`DELETE FROM contact_job_parts WHERE job_id = ${jobId}`
    context.readers.delete(jobId)
    yield* Effect.promise(() => open.close())
  }
  return { handedOver: valid.length, continued }
})

/**
 * Contacts of the chunk's emails: existing ones found, new ones created with their row's data and
 * subscription (the form's default, else subscribed, as `POST /contacts`). A contact another writer
 * creates meanwhile is found on the next round.
 */
const createOrFind = Effect.fnUntraced(function*(projectId: string, plan: ImportPlan, rows: ReadonlyArray<Pending>) {
  const sql = yield* SqlClient.SqlClient
  const found = new Map<string, { id: string; created: boolean }>()
  let pending = rows
  for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
    // Existing contacts by the unique (project, email) index; then the others inserted, a contact
    // created by another writer meanwhile being skipped here and found on the next round.
    const existing = yield* sql<{ id: string; email: string }>`
      SELECT id, email FROM contacts WHERE project_id = ${projectId} AND email = ANY(${pgArray(pending.map((row) => row.email))}::text[])`
    for (const row of existing) found.set(row.email, { id: row.id, created: false })
    const missing = pending.filter((row) => !found.has(row.email))
    if (missing.length > 0) {
      const now = new Date().toISOString()
      const inserted = yield* sql<{ id: string; email: string }>`
        INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT id, ${projectId}, email, subscribed, data, ${now}::timestamptz, ${now}::timestamptz
        FROM unnest(${pgArray(missing.map(() => uuidv7()))}::uuid[], ${pgArray(missing.map((row) => row.email))}::text[],
                    ${`{${missing.map((row) => row.subscribed ?? plan.defaultSubscribed ?? true).join(",")}}`}::boolean[],
                    ${pgArray(missing.map((row) => JSON.stringify(row.set)))}::jsonb[]) AS x(id, email, subscribed, data)
        ON CONFLICT (project_id, email) DO NOTHING
        RETURNING id, email`
      for (const row of inserted) found.set(row.email, { id: row.id, created: true })
    }
    pending = pending.filter((row) => !found.has(row.email))
  }
  if (pending.length > 0) return yield* Effect.die(new Error(`could not resolve ${pending.length} imported contacts`))
  const types: Record<string, unknown> = {}
  for (const row of rows) {
    if (!found.get(row.email)!.created) continue
    for (const [key, value] of Object.entries(row.set)) if (!(key in types)) types[key] = value
  }
  if (Object.keys(types).length > 0) {
    yield* sql`
      INSERT INTO contact_fields (project_id, key, type)
      SELECT ${projectId}, f->>0, f->>1 FROM jsonb_array_elements(${JSON.stringify(inferFieldTypes(types))}::jsonb) f
      ON CONFLICT DO NOTHING`
  }
  return found
})
