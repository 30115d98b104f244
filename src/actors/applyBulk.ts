/**
 * A lane applies its rows of a contact job (`bulk` messages) inside its batch transaction, in stream
 * order with its live traffic, and adds what it did to the job's progress row for this lane:
 * - import: a contact the reader created is evaluated like any new contact (segments, workflows); an
 *   existing one gets the row's data and subscription as a tracked change would (fields pinned by a
 *   later direct write keep their value; unchanged values rewrite nothing);
 * - subscribe / unsubscribe: the subscription is set (contact.subscribed / unsubscribed when it changes);
 * - delete: the contact is deleted, leaving its segments (with exit events) and ending its workflow
 *   executions, as `DELETE /contacts/:id` does.
 */
import { Clock, Effect } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { exceedsContactDataLimit, jsonBytes, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import { addJobProgress, insertJobErrors, type JobError } from "../store/ContactJobs.ts"
import { deleteContacts, lockContactsById, updateBulkContacts } from "../store/engine/bulk.ts"
import { insertFieldTypes } from "../store/engine/contacts.ts"
import type { BulkMessage } from "../stream/messages.ts"
import type { ContactChange } from "./segmentEvaluation.ts"

export interface BulkHooks {
  /** A subscription change to emit (contact.subscribed / contact.unsubscribed) with the batch's others. */
  readonly subscriptionChanged: (contactId: string, email: string, subscribed: boolean, at: string, source: string) => void
  readonly changeOf: (contactId: string, at?: string) => ContactChange
  /** What a deleted contact leaves behind (segments, workflow executions), as for contact.deleted. */
  readonly contactDeleted: (contactId: string, email: string, at: string) => Effect.Effect<void, SqlError.SqlError, SqlClient.SqlClient>
}

const sameJson = (a: unknown, b: unknown) => a === b || (a !== undefined && JSON.stringify(a) === JSON.stringify(b))

export const applyBulk = Effect.fnUntraced(function*(projectId: string, body: BulkMessage, hooks: BulkHooks) {
  const sql = yield* SqlClient.SqlClient
  const errors: Array<JobError> = []
  let created = 0
  let updated = 0
  const notFound = (row: number, contactId: string, reason: string) => errors.push({ row, contactId, reason })
  const source = `api.contacts.${body.op === "import" ? "import" : "bulk"}`

  if (body.op === "delete") {
    const gone = new Map((yield* deleteContacts(projectId, body.rows.map((row) => row.contactId))).map((row) => [row.id, row.email]))
    for (const row of body.rows) {
      const email = gone.get(row.contactId)
      if (email === undefined) notFound(row.row, row.contactId, "contact not found (deleted meanwhile)")
      else {
        updated++
        yield* hooks.contactDeleted(row.contactId, email, body.at)
      }
    }
  } else {
    // Rows whose contact the reader created need nothing read: they are evaluated, not written.
    const existing = body.rows.filter((row) => !row.created).map((row) => row.contactId)
    const rows = existing.length === 0 ?
      [] :
      yield* lockContactsById(projectId, existing)
    const contacts = new Map(rows.map((row) => [row.id, {
      email: row.email,
      subscribed: row.subscribed,
      pins: typeof row.pinned_at === "string" ? JSON.parse(row.pinned_at) as Record<string, number> : row.pinned_at,
      data: typeof row.data === "string" ? JSON.parse(row.data) as Record<string, unknown> : { ...row.data },
      set: {} as Record<string, unknown>,
      touched: false
    }]))
    const acceptedAt = Date.parse(body.at)
    for (const row of body.rows) {
      if (row.created) {
        // Written by the reader with the row's data: new to the project, so evaluated against every segment.
        created++
        hooks.changeOf(row.contactId, body.at).fields = "all"
        continue
      }
      const contact = contacts.get(row.contactId)
      if (!contact) {
        notFound(row.row, row.contactId, "contact not found (deleted meanwhile)")
        continue
      }
      const change = hooks.changeOf(row.contactId, body.at)
      updated++
      const wanted = body.op === "subscribe" ? true : body.op === "unsubscribe" ? false : row.subscribed ?? null
      const pinnedAfter = (field: string) => body.op === "import" && (contact.pins[field] ?? -Infinity) >= acceptedAt
      if (wanted !== null && wanted !== contact.subscribed && !pinnedAfter("subscribed")) {
        contact.subscribed = wanted
        contact.touched = true
        if (change.fields !== "all") change.fields.add("subscribed")
        hooks.subscriptionChanged(row.contactId, contact.email, wanted, body.at, source)
      }
      const set = Object.entries(row.set ?? {}).filter(([key, value]) => !pinnedAfter(`data.${key}`) && !sameJson(contact.data[key], value))
      if (set.length === 0) continue
      const next = { ...contact.data, ...Object.fromEntries(set) }
      if (exceedsContactDataLimit(jsonBytes(contact.data), jsonBytes(next))) {
        updated--
        errors.push({ row: row.row, email: contact.email, reason: `the contact's data would exceed ${MAX_CONTACT_DATA_BYTES / 1024} KiB` })
        continue
      }
      contact.data = next
      for (const [key, value] of set) {
        contact.set[key] = value
        if (change.fields !== "all") change.fields.add(`data.${key}`)
      }
      contact.touched = true
    }
    const changes = [...contacts].filter(([, contact]) => contact.touched).map(([id, contact]) => ({
      id,
      subscribed: contact.subscribed,
      set: contact.set
    }))
    if (changes.length > 0) {
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      yield* updateBulkContacts(changes, now)
      const types: Record<string, unknown> = {}
      for (const change of changes) for (const [key, value] of Object.entries(change.set)) if (!(key in types)) types[key] = value
      if (Object.keys(types).length > 0) {
        yield* insertFieldTypes(projectId, types)
      }
    }
  }
  yield* insertJobErrors(sql, body.jobId, errors)
  yield* addJobProgress(sql, body.jobId, body.lane, { processed: body.rows.length, created, updated, failed: errors.length })
})
