/**
 * The one way to publish: messages are appended to the `outbox` table in the caller's transaction and
 * published by the OutboxRelay after the commit (so a message exists exactly when its change does).
 *
 * - `append` routes each IN message to its lane (see `routeOf`): a contact's messages to the contact's
 *   lane, project-wide ones to the owner lane or to every lane, and derives the subject
 *   `<prefix>.lane.<partition>.<projectId>.<lane>.<kind>`.
 * - Every insert into `outbox` NOTIFYs `mailstream_outbox` (a trigger, migration 0015), which every
 *   process's relay LISTENs to; Postgres delivers it at commit, not at all on rollback. A worker's batch
 *   opts out (`mailstream.quiet_outbox`: a NOTIFY makes commits take turns) and wakes its own relay.
 * - `contactSubjectSql` gives statements that create contacts in SQL (whose ids the caller does not
 *   know) the same routing, computed from the id column.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { laneSubject, type Lanes, makeLanes, OWNER_LANE } from "./lanes.ts"
import { Nats } from "./Nats.ts"
import { type InKind, type InMessage, type OutEvent, routeOf } from "./messages.ts"

export const OUTBOX_CHANNEL = "mailstream_outbox"

export interface EmittedEvent {
  readonly name: string
  readonly contactId: string
  readonly email: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

export interface OutboxRow {
  readonly id: string
  readonly subject: string
  readonly payload: string
}

export class Outbox extends Context.Service<Outbox, {
  readonly lanes: Lanes
  /** Appends IN messages (in the caller's transaction, if any), each routed to its lane(s); answers the rows. */
  readonly append: (messages: ReadonlyArray<InMessage>) => Effect.Effect<ReadonlyArray<OutboxRow>, SqlError.SqlError>
  /**
   * Publishes appended rows at once, after their commit (same Nats-Msg-Id, so the relay's copy is
   * dropped): a request accepted after the caller answered is then behind them in the stream. A
   * failure is ignored: the relay publishes them.
   */
  readonly publishNow: (rows: ReadonlyArray<OutboxRow>) => Effect.Effect<void>
  /**
   * Publishes committed rows in order (pipelined on one connection, so JetStream stores them in this
   * order), same Nats-Msg-Id as the relay's: true when every one was stored, false when one was not
   * (the relay publishes them; its copies of the others are dropped as duplicates).
   */
  readonly publishCommitted: (rows: ReadonlyArray<OutboxRow>) => Effect.Effect<boolean>
  /**
   * Emits events about contacts (contact.subscribed, segment.<slug>.entry, email.sent, …): each goes to
   * stream OUT and, as an `event` message, to its contact's lane, where it is recorded as the contact's
   * event and can trigger workflows. One statement, in the caller's transaction.
   */
  readonly emit: (projectId: string, events: ReadonlyArray<EmittedEvent>) => Effect.Effect<void, SqlError.SqlError>
  /**
   * Emits events to stream OUT only, answering them with their ids: for an actor that records them
   * itself, in the same batch, rather than have them travel back through IN.
   */
  readonly emitOut: (projectId: string, events: ReadonlyArray<EmittedEvent>) => Effect.Effect<ReadonlyArray<OutEvent>, SqlError.SqlError>
  /** `emitOut`'s events and rows without writing them: for a statement that inserts them with `rowsSql`. */
  readonly outEvents: (projectId: string, events: ReadonlyArray<EmittedEvent>) => {
    readonly events: ReadonlyArray<OutEvent>
    readonly rows: ReadonlyArray<OutboxRow>
  }
  /** SQL: inserts the rows into `outbox`, in order (usable as a data-modifying CTE). */
  readonly rowsSql: (rows: ReadonlyArray<OutboxRow>) => Statement.Statement<unknown>
  /** The rows `append` would write, for statements that insert them themselves. */
  readonly rowsOf: (messages: ReadonlyArray<InMessage>) => ReadonlyArray<OutboxRow>
  /** A SQL expression for the subject of a `kind` message about the contact whose id is `idColumn`. */
  readonly contactSubjectSql: (projectId: string, idColumn: string, kind: InKind) => Statement.Fragment
  /** The subject of a message to one lane of a project. */
  readonly subject: (projectId: string, lane: number, kind: InKind) => string
}>()("app/stream/Outbox") {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats
      const config = yield* AppConfig
      const lanes = makeLanes(config.lanesPerProject, config.partitions)
      const prefix = config.natsPrefix

      const subject = (projectId: string, lane: number, kind: InKind) => laneSubject(prefix, lanes, projectId, lane, kind)

      const rowsOf = (messages: ReadonlyArray<InMessage>): Array<OutboxRow> => {
        const rows: Array<OutboxRow> = []
        for (const message of messages) {
          const payload = JSON.stringify(message)
          const route = routeOf(message)
          switch (route._tag) {
            case "contact":
              rows.push({ id: uuidv7(), subject: subject(message.projectId, lanes.laneOf(route.contactId), message.kind), payload })
              break
            case "lane":
              rows.push({ id: uuidv7(), subject: subject(message.projectId, route.lane, message.kind), payload })
              break
            case "owner":
              rows.push({ id: uuidv7(), subject: subject(message.projectId, OWNER_LANE, message.kind), payload })
              break
            case "all":
              for (let lane = 0; lane < lanes.count; lane++) {
                rows.push({ id: uuidv7(), subject: subject(message.projectId, lane, message.kind), payload })
              }
          }
        }
        return rows
      }

      const rowsSql = (rows: ReadonlyArray<OutboxRow>) =>
        sql`
        INSERT INTO outbox (id, subject, payload)
        SELECT (t.x->>'id')::uuid, t.x->>'subject', (t.x->>'payload')::jsonb
        FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) WITH ORDINALITY AS t(x, n)
        ORDER BY t.n`

      const insert = (rows: ReadonlyArray<OutboxRow>): Effect.Effect<void, SqlError.SqlError> =>
        rows.length === 0 ? Effect.void : sql`WITH ins AS (${rowsSql(rows)} RETURNING 1) SELECT count(*) FROM ins`.pipe(Effect.asVoid)

      const append = (messages: ReadonlyArray<InMessage>) => {
        const rows = rowsOf(messages)
        return Effect.as(insert(rows), rows)
      }

      const publishCommitted = (rows: ReadonlyArray<OutboxRow>) =>
        rows.length === 0 ?
          Effect.succeed(true) :
          Effect.tryPromise(() =>
            Promise.all(rows.map((row) => nats.js.publish(row.subject, row.payload, { msgID: row.id, timeout: 3000 })))
          ).pipe(Effect.as(true), Effect.orElseSucceed(() => false))

      const publishNow = (rows: ReadonlyArray<OutboxRow>) => Effect.asVoid(publishCommitted(rows))

      const outRows = (events: ReadonlyArray<OutEvent>): Array<OutboxRow> =>
        events.map((event) => ({ id: event.id, subject: `${prefix}.out.${event.projectId}.${event.name}`, payload: JSON.stringify(event) }))

      const outEvents = (projectId: string, events: ReadonlyArray<EmittedEvent>) => {
        const out: Array<OutEvent> = events.map((event) => ({ id: uuidv7(), projectId, ...event }))
        return { events: out, rows: outRows(out) }
      }

      const emitOut = (projectId: string, events: ReadonlyArray<EmittedEvent>) => {
        const { events: out, rows } = outEvents(projectId, events)
        return Effect.as(insert(rows), out)
      }

      const emit = (projectId: string, events: ReadonlyArray<EmittedEvent>) => {
        if (events.length === 0) return Effect.void
        const out: Array<OutEvent> = []
        const feedback: Array<InMessage> = []
        for (const event of events) {
          const id = uuidv7()
          out.push({ id, projectId, ...event })
          feedback.push({
            kind: "event",
            projectId,
            eventId: id,
            contactId: event.contactId,
            email: event.email,
            name: event.name,
            data: event.data,
            at: event.at
          })
        }
        return insert([...outRows(out), ...rowsOf(feedback)])
      }

      const contactSubjectSql = (projectId: string, idColumn: string, kind: InKind) => {
        const partitions = `{${lanes.partitionsOf(projectId).join(",")}}`
        const lane = `(get_byte(uuid_send(${idColumn}), 15) % ${lanes.count})`
        return sql`(${`${prefix}.lane.`} || (${partitions}::int[])[${sql.literal(lane)} + 1] || '.' || ${projectId}::text || '.' || ${
          sql.literal(lane)
        } || ${`.${kind}`})`
      }

      return Outbox.of({
        lanes,
        append,
        publishNow,
        publishCommitted,
        emit,
        emitOut,
        outEvents,
        rowsSql,
        rowsOf,
        contactSubjectSql,
        subject
      })
    })
  )
}
