/**
 * One range of a CSV import, read by a lane inside its batch transaction (one `importStep` command per
 * range, on lane `range mod L`, IMPORT_READ_AHEAD ranges at a time, so ranges are read in parallel): its rows are read from the
 * stored file, bad rows reported, contacts new to the project created with their row's data, and every
 * row sent to its contact's lane as a `bulk` message, to be applied there in order with that lane's live
 * traffic. The range is marked read in the same transaction, so a worker killed mid-import leaves it
 * to the lane's next owner (the stream redelivers the step) and no row is handed over twice.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { type ImportPlan, readRow } from "../domain/imports/plan.ts"
import { readRange } from "../imports/reader.ts"
import { addJobProgress, IMPORT_READ_AHEAD, importStepCommand, insertJobErrors, type JobError, PART_BYTES } from "../store/ContactJobs.ts"
import { insertFieldTypes } from "../store/engine/contacts.ts"
import {
  claimImportRange,
  contactsByEmail,
  dropImportFileIfRead,
  failImportJob,
  importJob,
  importParts,
  insertImportedContacts
} from "../store/engine/imports.ts"
import type { Outbox } from "../stream/Outbox.ts"
import type { BulkMessage, BulkRow } from "../stream/messages.ts"

/** About a quarter of NATS's default 1 MiB payload limit. */
const MAX_MESSAGE_BYTES = 256 * 1024

export interface ImportStepContext {
  readonly projectId: string
  /** The lane running the step (its progress row counts the rows the reader skipped). */
  readonly lane: number
  readonly outbox: Outbox["Service"]
}

interface Pending {
  readonly row: number
  readonly email: string
  readonly subscribed: boolean | null
  readonly set: Record<string, unknown>
}

export const importStep = Effect.fnUntraced(function*(context: ImportStepContext, jobId: string, range: number) {
  const sql = yield* SqlClient.SqlClient
  const job = yield* importJob(context.projectId, jobId)
  if (!job || job.failure !== null) return { handedOver: 0 }
  // Claims the range (locked until this batch commits; a rolled-back batch leaves it unread).
  if (!(yield* claimImportRange(jobId, range))) return { handedOver: 0 }

  // The range's parts in one query, in this transaction; parsed from memory (about RANGE_BYTES of the file).
  const span = job.plan.ranges[range]
  const parts = span === undefined ? [] : yield* importParts(
    jobId,
    Math.floor(span.offset / PART_BYTES),
    Math.floor(Math.max(span.offset, span.end - 1) / PART_BYTES)
  )
  // Exactly the range's bytes: a record cut at a part boundary after it must not reach the parser.
  const bytes = parts.map((row) => {
    const start = row.part * PART_BYTES
    return row.bytes.subarray(Math.max(0, span!.offset - start), Math.max(0, span!.end - start))
  })
  // The file was checked at upload; one that no longer reads (a parser upgrade, a damaged part) fails
  // the job with the reason rather than failing the lane's batch over and over.
  const read = yield* Effect.tryPromise(() =>
    span === undefined ? Promise.reject(new Error(`the job has no range ${range}`)) : readRange(bytes, job.plan, span)
  ).pipe(Effect.result)
  if (read._tag === "Failure") {
    const cause = read.failure.cause
    yield* failImportJob(jobId, `the file could not be read: ${cause instanceof Error ? cause.message : String(cause)}`)
    return { handedOver: 0 }
  }
  const errors: Array<JobError> = []
  const valid: Array<Pending> = []
  for (const { row, record } of read.success) {
    const outcome = readRow(job.plan, record)
    if (outcome._tag === "bad") {
      errors.push({ row, ...(outcome.email ? { email: outcome.email } : {}), reason: outcome.reason })
      continue
    }
    const last = job.plan.duplicates[row]
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
    rows.push(
      contact.created
        ? { row: pending.row, contactId: contact.id, created: true }
        : { row: pending.row, contactId: contact.id, subscribed: pending.subscribed, set: pending.set }
    )
  }
  // One message per lane, split so none nears NATS's payload limit (a range's rows may carry a lot of data).
  const messages: Array<BulkMessage> = []
  for (const [lane, rows] of byLane) {
    let part: Array<BulkRow> = []
    let bytes = 0
    for (const row of rows) {
      const size = 80 + (row.set === undefined ? 0 : JSON.stringify(row.set).length)
      if (part.length > 0 && bytes + size > MAX_MESSAGE_BYTES) {
        messages.push({ kind: "bulk", projectId: context.projectId, jobId, op: "import", lane, at, rows: part })
        part = []
        bytes = 0
      }
      part.push(row)
      bytes += size
    }
    messages.push({ kind: "bulk", projectId: context.projectId, jobId, op: "import", lane, at, rows: part })
  }
  // The range READ_AHEAD further on starts when this one is handed over: at most READ_AHEAD ranges
  // of a file are in flight at once, whatever its size (memory stays flat, live traffic keeps moving).
  const nextRange = range + IMPORT_READ_AHEAD
  yield* context.outbox.append(nextRange < job.plan.ranges.length ? [...messages, importStepCommand(context, jobId, nextRange)] : messages)
  if (errors.length > 0) {
    yield* insertJobErrors(sql, jobId, errors)
    yield* addJobProgress(sql, jobId, context.lane, { processed: errors.length, skipped: errors.length })
  }
  // The last range read drops the file (two finishing at once may both leave it: the status read does then).
  yield* dropImportFileIfRead(jobId, range)
  return { handedOver: valid.length }
})

/**
 * Contacts of the range's emails: existing ones found, new ones created with their row's data and
 * subscription (the form's default, else subscribed, as `POST /contacts`). A contact another writer
 * creates meanwhile is found on the next round.
 */
const createOrFind = Effect.fnUntraced(function*(projectId: string, plan: ImportPlan, rows: ReadonlyArray<Pending>) {
  const found = new Map<string, { id: string; created: boolean }>()
  let pending = rows
  for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
    // Existing contacts by the unique (project, email) index; then the others inserted, a contact
    // created by another writer meanwhile being skipped here and found on the next round.
    const existing = yield* contactsByEmail(projectId, pending.map((row) => row.email))
    for (const row of existing) found.set(row.email, { id: row.id, created: false })
    const missing = pending.filter((row) => !found.has(row.email))
    if (missing.length > 0) {
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const input = missing.map((row) => ({
        id: uuidv7(),
        email: row.email,
        subscribed: row.subscribed ?? plan.defaultSubscribed ?? true,
        data: row.set
      }))
      const inserted = yield* insertImportedContacts(projectId, input, now)
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
    yield* insertFieldTypes(projectId, types)
  }
  return found
})
