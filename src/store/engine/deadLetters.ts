/** The engine's dead letters: a message that fails on its own, and data changes set aside for size, recorded to be replayed. */
import { SqlClient } from "effect/sql"
import { MAX_CONTACT_DATA_BYTES } from "../../domain/customData.ts"
import { uuidv7 } from "../../domain/ids.ts"
import type { TrackedEvent } from "../../stream/messages.ts"

/** SQL: the oversized events' data changes, set aside as replayable dead letters. */
export const oversizedSql = (sql: SqlClient.SqlClient, projectId: string, partition: number, oversized: ReadonlyArray<TrackedEvent>) =>
  sql`
  INSERT INTO dead_letters (id, project_id, partition, source, payload, error)
  SELECT (x->>'id')::uuid, ${projectId}, ${partition}, 'actor', x->>'payload', x->>'error'
  FROM jsonb_array_elements(${
    JSON.stringify(oversized.map((event) => ({
      id: uuidv7(),
      payload: JSON.stringify({ kind: "track", projectId, events: [event] }),
      error: `contact data limit: this change would grow contact ${event.contactId}'s data past ${MAX_CONTACT_DATA_BYTES / 1024} KiB ` +
        `(the event itself was recorded; replay after making room)`
    })))
  }::jsonb) x`

/** A stream message set aside (its body as JSON, the error cut to 4,000 characters). */
export const insertDeadLetter = (
  sql: SqlClient.SqlClient,
  message: { readonly projectId: string; readonly partition: number; readonly seq: number; readonly body: unknown; readonly error: string }
) =>
  sql`INSERT INTO dead_letters (id, project_id, partition, seq, payload, error)
               VALUES (${uuidv7()}, ${message.projectId}, ${message.partition}, ${message.seq},
                       ${JSON.stringify(message.body)}, ${message.error.slice(0, 4000)})`

/** A stream message that does not decode, set aside with its subject and (the first MB of) its text. */
export const insertUndecodableSql = (
  sql: SqlClient.SqlClient,
  message: {
    readonly projectId: string
    readonly partition: number
    readonly seq: number
    readonly subject: string
    readonly text: string
    readonly error: string
  }
) =>
  sql`INSERT INTO dead_letters (id, project_id, partition, seq, source, subject, payload, error)
                       VALUES (${uuidv7()}, ${message.projectId}, ${message.partition}, ${message.seq}, 'stream', ${message.subject},
                               ${message.text.slice(0, 1_000_000)}, ${message.error.slice(0, 4000)})`
