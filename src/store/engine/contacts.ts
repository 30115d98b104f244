/** The engine's contact SQL: a batch's contacts locked, the missing ones created, their folded changes written. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { inferFieldTypes } from "../../domain/customData.ts"
import { pgArray } from "../../lib/pgArray.ts"

/** A contact as a batch reads it, locked (FOR UPDATE). */
export interface LockedContact {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly pinned_at: Record<string, number> | string
  readonly data: Record<string, unknown> | string
}

/** What a batch's fold left of a contact to write (only `touched` contacts are written). */
export interface ContactWrite {
  readonly id: string
  readonly subscribed: boolean
  readonly set: Record<string, unknown>
  readonly remove: ReadonlySet<string>
  readonly touched: boolean
}

/**
 * SQL (a data-modifying statement, usable as a CTE): the touched contacts' new subscription and data, and
 * the types of the custom fields they now have; returns a row per contact and field written.
 */
export const contactWritesSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  contacts: Iterable<ContactWrite>,
  now: string
) => {
  const changes: Array<{ id: string; subscribed: boolean; set: Record<string, unknown>; remove: Array<string> }> = []
  const merged: Record<string, unknown> = {}
  for (const contact of contacts) {
    if (!contact.touched) continue
    changes.push({ id: contact.id, subscribed: contact.subscribed, set: contact.set, remove: [...contact.remove] })
    for (const [key, value] of Object.entries(contact.set)) if (!(key in merged)) merged[key] = value
  }
  return {
    count: changes.length,
    updated: sql`
      UPDATE contacts c SET
        subscribed = x.subscribed,
        data = (c.data - ARRAY(SELECT jsonb_array_elements_text(x.remove))) || x.set,
        updated_at = ${now}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(changes)}::jsonb) AS x(id uuid, subscribed boolean, set jsonb, remove jsonb)
      -- The ids as an array too: a cached generic plan takes the record set for 100 rows and would hash
      -- the whole contacts table (a sequential scan per batch); the array keeps it on the primary key.
      WHERE c.id = x.id AND c.id = ANY(${pgArray(changes.map((change) => change.id))}::uuid[])`,
    fields: sql`
      INSERT INTO contact_fields (project_id, key, type)
      SELECT ${projectId}, f->>0, f->>1 FROM jsonb_array_elements(${JSON.stringify(inferFieldTypes(merged))}::jsonb) f
      ON CONFLICT DO NOTHING`
  }
}

/** Writes the contacts' changes and their fields' types (contactWritesSql) in one round trip, if any contact changed. */
export const writeContacts = Effect.fnUntraced(function*(projectId: string, contacts: Iterable<ContactWrite>, now: string) {
  const sql = yield* SqlClient.SqlClient
  const writes = contactWritesSql(sql, projectId, contacts, now)
  if (writes.count > 0) {
    // One round trip: the contacts and the types of the custom fields they now have.
    yield* sql`
      WITH updated AS (${writes.updated} RETURNING 1), fields AS (${writes.fields} RETURNING 1)
      SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM fields) AS n`
  }
})

/** The project's contacts with these emails, locked in id order (as every locker does). */
export const lockContacts = (sql: SqlClient.SqlClient, projectId: string, emails: ReadonlyArray<string>) =>
  sql<LockedContact>`
      SELECT id, email, subscribed, pinned_at, data FROM contacts
      WHERE project_id = ${projectId}
        AND email = ANY(${pgArray(emails)}::text[])
      ORDER BY id
      FOR UPDATE`

/** Creates the contacts of tracked events that no longer exist (deleted since the api resolved them), at `now`. */
export const createMissingContacts = Effect.fnUntraced(function*(
  projectId: string,
  missing: ReadonlyArray<{ readonly contactId: string; readonly email: string; readonly subscribed: boolean | null }>,
  now: string
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      -- The api's id, unless that id now belongs to another contact (its email changed meanwhile).
      -- A fresh id keeps the api's last byte, so the contact stays in this lane.
      SELECT CASE WHEN EXISTS (SELECT 1 FROM contacts WHERE id = (x->>'contactId')::uuid)
                  THEN encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(uuid_send((x->>'contactId')::uuid) FROM 16 FOR 1)
                                      FROM 16 FOR 1), 'hex')::uuid
                  ELSE (x->>'contactId')::uuid END,
             ${projectId}, x->>'email', COALESCE((x->>'subscribed')::boolean, true),
             '{}'::jsonb, ${now}::timestamptz, ${now}::timestamptz
      FROM jsonb_array_elements(${JSON.stringify(missing)}::jsonb) x
      ON CONFLICT DO NOTHING`
})

/** Records the types of custom fields (`types`: a field's name and a value of it) the project did not have yet. */
export const insertFieldTypes = Effect.fnUntraced(function*(projectId: string, types: Record<string, unknown>) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
      INSERT INTO contact_fields (project_id, key, type)
      SELECT ${projectId}, f->>0, f->>1 FROM jsonb_array_elements(${JSON.stringify(inferFieldTypes(types))}::jsonb) f
      ON CONFLICT DO NOTHING`
})
