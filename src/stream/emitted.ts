/**
 * Events the service emits (contact.subscribed, segment.<slug>.entry, …): each one is committed to the
 * outbox twice, in the caller's transaction — for stream OUT (`<prefix>.out.<projectId>.<name>`, with
 * Nats-Msg-Id = the event id) and back into the project's partition of IN, where the actor records it
 * as the contact's event (so it shows in the events API and can trigger workflows).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import type { StreamNames } from "./subjects.ts"

export interface EmittedEvent {
  readonly name: string
  readonly contactId: string
  readonly email: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

export const writeEmittedEvents = Effect.fnUntraced(function*(
  names: StreamNames,
  projectId: string,
  events: ReadonlyArray<EmittedEvent>
) {
  if (events.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const rows = events.flatMap((event) => {
    const id = uuidv7()
    return [
      {
        id,
        subject: names.outSubject(projectId, event.name),
        payload: { id, projectId, name: event.name, contactId: event.contactId, email: event.email, data: event.data, at: event.at }
      },
      {
        id: uuidv7(),
        subject: names.inSubject(projectId, "event"),
        payload: { kind: "event", projectId, eventId: id, contactId: event.contactId, email: event.email, name: event.name, data: event.data, at: event.at }
      }
    ]
  })
  yield* sql`
    INSERT INTO outbox (id, subject, payload)
    SELECT (x->>'id')::uuid, x->>'subject', x->'payload'
    FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) WITH ORDINALITY AS t(x, n)
    ORDER BY n`
})
