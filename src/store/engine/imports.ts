/**
 * The engine's SQL for a CSV import's ranges (actors/importStep.ts), read by lanes inside their batch
 * transactions: the job, a range claimed, its stored parts, the job failed, the file dropped once read,
 * and the range's contacts found or created.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { ImportPlan } from "../../domain/imports/plan.ts"
import { pgArray } from "../../lib/pgArray.ts"

/** The project's import job. */
export const importJob = Effect.fnUntraced(function*(projectId: string, jobId: string) {
  const sql = yield* SqlClient.SqlClient
  const [job] = yield* sql<{ plan: ImportPlan; created_at: Date; failure: string | null }>`
    SELECT j.plan, j.created_at, j.failure FROM contact_jobs j
    WHERE j.id = ${jobId} AND j.project_id = ${projectId} AND j.kind = 'import'`
  return job
})

/** Claims the range (locked until this batch commits; a rolled-back batch leaves it unread): false when read already. */
export const claimImportRange = Effect.fnUntraced(function*(jobId: string, range: number) {
  const sql = yield* SqlClient.SqlClient
  const claimed =
    yield* sql`UPDATE contact_job_ranges SET read_at = now() WHERE job_id = ${jobId} AND range = ${range} AND read_at IS NULL RETURNING 1`
  return claimed.length > 0
})

/** The stored parts `first` to `last` of the job's file, in one query. */
export const importParts = Effect.fnUntraced(function*(jobId: string, first: number, last: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ part: number; bytes: Uint8Array }>`
    SELECT part, bytes FROM contact_job_parts
    WHERE job_id = ${jobId} AND part BETWEEN ${first} AND ${last}
    ORDER BY part`
})

/** Fails the job with the reason its file no longer reads. */
export const failImportJob = Effect.fnUntraced(function*(jobId: string, reason: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE contact_jobs SET failure = ${reason}
               WHERE id = ${jobId}`
})

/** Drops the job's file when no range but this one is left unread. */
export const dropImportFileIfRead = Effect.fnUntraced(function*(jobId: string, range: number) {
  const sql = yield* SqlClient.SqlClient
  const unread = yield* sql`SELECT 1 FROM contact_job_ranges WHERE job_id = ${jobId} AND read_at IS NULL AND range <> ${range} LIMIT 1`
  if (unread.length === 0) yield* sql`DELETE FROM contact_job_parts WHERE job_id = ${jobId}`
})

/** The project's contacts with these emails (by the unique (project, email) index). */
export const contactsByEmail = Effect.fnUntraced(function*(projectId: string, emails: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ id: string; email: string }>`
      SELECT id, email FROM contacts WHERE project_id = ${projectId} AND email = ANY(${pgArray(emails)}::text[])`
})

/** Creates the contacts, at `now`; one another writer created meanwhile is skipped (not returned). */
export const insertImportedContacts = Effect.fnUntraced(function*(
  projectId: string,
  contacts: ReadonlyArray<
    { readonly id: string; readonly email: string; readonly subscribed: boolean; readonly data: Record<string, unknown> }
  >,
  now: string
) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ id: string; email: string }>`
        INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT id, ${projectId}, email, subscribed, data, ${now}::timestamptz, ${now}::timestamptz
        FROM jsonb_to_recordset(${JSON.stringify(contacts)}::jsonb) AS x(id uuid, email text, subscribed boolean, data jsonb)
        ON CONFLICT (project_id, email) DO NOTHING
        RETURNING id, email`
})
