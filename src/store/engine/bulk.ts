/** The engine's SQL for a lane's rows of a contact job (`bulk` messages, actors/applyBulk.ts): contacts deleted, locked, updated. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"

/** Deletes the project's contacts with these ids: those deleted now, with their emails. */
export const deleteContacts = Effect.fnUntraced(function*(projectId: string, contactIds: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ id: string; email: string }>`
      DELETE FROM contacts WHERE project_id = ${projectId} AND id = ANY(${pgArray(contactIds)}::uuid[])
      RETURNING id, email`
})

/** The project's contacts with these ids, locked in id order (as every locker does). */
export const lockContactsById = Effect.fnUntraced(function*(projectId: string, contactIds: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<
    {
      id: string
      email: string
      subscribed: boolean
      pinned_at: Record<string, number> | string
      data: Record<string, unknown> | string
    }
  >`
      SELECT id, email, subscribed, pinned_at, data FROM contacts
      WHERE project_id = ${projectId} AND id = ANY(${pgArray(contactIds)}::uuid[])
      ORDER BY id FOR UPDATE`
})

/** Sets the contacts' subscription and merges `set` into their data, at `now`. */
export const updateBulkContacts = Effect.fnUntraced(function*(
  changes: ReadonlyArray<{ readonly id: string; readonly subscribed: boolean; readonly set: Record<string, unknown> }>,
  now: string
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
        UPDATE contacts c SET subscribed = x.subscribed, data = c.data || x.set, updated_at = ${now}::timestamptz
        FROM jsonb_to_recordset(${JSON.stringify(changes)}::jsonb) AS x(id uuid, subscribed boolean, set jsonb)
        WHERE c.id = x.id`
})
