/**
 * Messages set aside because they could not be applied or published (`dead_letters`): listed per
 * project, replayed once the cause is fixed, or deleted.
 *
 * A replay appends the stored message to the stream again, on the same subject it had (a stream or
 * actor letter goes back to its project's partition of IN). It is therefore applied after every
 * message already in that partition and before any published later, the same place a new message
 * about the contact would take: the contact's messages stay in stream order. Replaying is safe to
 * repeat: events keep their ids (stored once), so only what did not apply the first time takes effect.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { DeadLetterNotReplayable, InvalidCursor } from "../domain/errors.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { SqlClient } from "effect/sql"
import { CountRow, decodeRows, IdRow, iso, NullableTimestamp, Timestamp } from "./columns.ts"
import { AppConfig } from "../config.ts"
import { storableProblem } from "../domain/storable.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import { InMessage } from "../stream/messages.ts"
import { Outbox } from "../stream/Outbox.ts"

/**
 * A replayed track message is new to its lane: the ingest positions its events were split with are
 * behind the lane's by now (applyBatch would skip them as already applied).
 */
const withoutIngestPositions = (message: InMessage): InMessage =>
  message.kind === "track" ? { ...message, events: message.events.map(({ pos: _pos, ...event }) => event) } : message

export interface DeadLetterSummary {
  readonly kind: string | null
  readonly type: string | null
  readonly name: string | null
  readonly contactId: string | null
  readonly email: string | null
  readonly events: number | null
  readonly bytes: number
}

export interface DeadLetter {
  readonly id: string
  readonly source: "stream" | "outbox" | "actor"
  readonly reason: string
  readonly subject: string | null
  readonly partition: number | null
  readonly seq: number | null
  readonly summary: DeadLetterSummary
  readonly replays: number
  readonly replayedAt: string | null
  readonly createdAt: string
}

export interface DeadLetterDetail extends DeadLetter {
  readonly payload: unknown
}

/** A `dead_letters` row as COLUMNS select it: the payload is kept as text (it may not even be JSON). */
const Row = Schema.Struct({
  id: Schema.String,
  source: Schema.Literals(["stream", "outbox", "actor"]),
  error: Schema.String,
  subject: Schema.NullOr(Schema.String),
  partition: Schema.NullOr(Schema.Number),
  // int8: the driver answers a number (a BigInt past 2^53), never the text the old row type claimed.
  seq: Schema.NullOr(Schema.Union([Schema.Number, Schema.BigInt])),
  payload: Schema.String,
  replays: Schema.Number,
  replayed_at: NullableTimestamp,
  created_at: Timestamp
})
type Row = typeof Row.Type

const COLUMNS = "id, source, error, subject, partition, seq, payload, replays, replayed_at, created_at"

const parse = (payload: string): unknown => {
  try {
    return JSON.parse(payload)
  } catch {
    return undefined
  }
}

const text = (value: unknown) => (typeof value === "string" ? value : null)

/** What an operator needs to recognise a message without reading it whole. */
export const summarize = (payload: string): DeadLetterSummary => {
  const body = parse(payload) as Record<string, unknown> | undefined
  const events = Array.isArray(body?.events) ? body.events as Array<Record<string, unknown>> : undefined
  const first = events?.[0]
  return {
    kind: text(body?.kind),
    type: text(body?.type),
    name: text(body?.name) ?? text(first?.name),
    contactId: text(body?.contactId) ?? text(first?.contactId),
    email: text(body?.email) ?? text(first?.email) ?? text((body?.contact as Record<string, unknown> | undefined)?.email),
    events: events ? events.length : null,
    bytes: Buffer.byteLength(payload)
  }
}

const toDeadLetter = (row: Row): DeadLetter => ({
  id: row.id,
  source: row.source,
  reason: row.error,
  subject: row.subject,
  partition: row.partition,
  seq: row.seq === null ? null : Number(row.seq),
  summary: summarize(row.payload),
  replays: row.replays,
  replayedAt: row.replayed_at,
  createdAt: row.created_at
})

export class DeadLetters extends Context.Service<DeadLetters, {
  readonly list: (projectId: string, query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly replayed: boolean | undefined
  }) => Effect.Effect<
    { readonly data: ReadonlyArray<DeadLetter>; readonly cursor: string | null; readonly hasMore: boolean; readonly total: number },
    InvalidCursor | PersistenceError
  >
  readonly get: (projectId: string, id: string) => Effect.Effect<DeadLetterDetail | undefined, PersistenceError>
  /**
   * Publishes the message again (through the outbox); undefined when there is no such letter,
   * DeadLetterNotReplayable when its payload is not a message of this project that can be published.
   */
  readonly replay: (projectId: string, id: string) => Effect.Effect<DeadLetter | undefined, DeadLetterNotReplayable | PersistenceError>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
}>()("app/store/DeadLetters") {
  static readonly layer = Layer.effect(
    DeadLetters,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const outbox = yield* Outbox
      const decodeInMessage = Schema.decodeUnknownOption(InMessage)
      const letters = decodeRows(Row)

      const list = Effect.fn("DeadLetters.list")(function*(projectId: string, query: {
        readonly limit: number
        readonly cursor: string | undefined
        readonly replayed: boolean | undefined
      }) {
        if (query.cursor !== undefined && !isUuid(query.cursor))
          return yield* InvalidCursor.of("The cursor is not one this endpoint returned")
        const filters = [sql`project_id = ${projectId}`]
        if (query.replayed !== undefined) filters.push(query.replayed ? sql`replayed_at IS NOT NULL` : sql`replayed_at IS NULL`)
        const page = query.cursor === undefined ? filters : [...filters, sql`id < ${query.cursor}::uuid`]
        const rows = yield* letters(sql`
          SELECT ${sql.literal(COLUMNS)} FROM dead_letters WHERE ${sql.and(page)} ORDER BY id DESC LIMIT ${query.limit + 1}`)
        const hasMore = rows.length > query.limit
        const data = rows.slice(0, query.limit).map(toDeadLetter)
        let total = 0
        if (query.cursor === undefined) {
          const [count] = yield* decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM dead_letters WHERE ${sql.and(filters)}`)
          total = count?.n ?? 0
        }
        return { data, cursor: hasMore ? data[data.length - 1]!.id : null, hasMore, total }
      }, mapSqlError)

      const find = (projectId: string, id: string) =>
        isUuid(id)
          ? letters(sql`SELECT ${sql.literal(COLUMNS)} FROM dead_letters WHERE project_id = ${projectId} AND id = ${id}`).pipe(
            Effect.map((rows) => rows[0])
          )
          : Effect.succeed(undefined)

      const get = Effect.fn("DeadLetters.get")(function*(projectId: string, id: string) {
        const row = yield* find(projectId, id)
        return row ? { ...toDeadLetter(row), payload: parse(row.payload) ?? row.payload } : undefined
      }, mapSqlError)

      /**
       * Puts a letter back on its way: a stream IN message through the outbox (so it is routed to its
       * lane as today's rules say, whatever subject it had), an OUT event to its own subject.
       */
      const requeue = (row: Row, body: unknown) => {
        const message = decodeInMessage(body)
        if (message._tag === "Some") return Effect.as(outbox.append([withoutIngestPositions(message.value)]), true)
        if (row.subject?.startsWith(`${config.natsPrefix}.out.`)) {
          return Effect.as(sql`INSERT INTO outbox (id, subject, payload) VALUES (${uuidv7()}, ${row.subject}, ${row.payload}::jsonb)`, true)
        }
        return Effect.succeed(false)
      }

      const replay = Effect.fn("DeadLetters.replay")(function*(projectId: string, id: string) {
        if (!isUuid(id)) return undefined
        return yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* letters(sql`
            SELECT ${sql.literal(COLUMNS)} FROM dead_letters WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE`)
          if (!row) return undefined
          const body = parse(row.payload)
          if (typeof body !== "object" || body === null || (body as { projectId?: unknown }).projectId !== projectId)
            return yield* DeadLetterNotReplayable.of()
          // What Postgres (and so the outbox) cannot hold can never be applied either.
          if (storableProblem(body, Number.MAX_SAFE_INTEGER) !== undefined) return yield* DeadLetterNotReplayable.of()
          if (!(yield* requeue(row, body))) return yield* DeadLetterNotReplayable.of()
          const [updated] = yield* letters(sql`
            UPDATE dead_letters SET replays = replays + 1, replayed_at = ${iso(yield* Clock.currentTimeMillis)}::timestamptz
            WHERE id = ${id} RETURNING ${sql.literal(COLUMNS)}`)
          return toDeadLetter(updated!)
        }))
      }, mapSqlError)

      const remove = Effect.fn("DeadLetters.remove")(function*(projectId: string, id: string) {
        if (!isUuid(id)) return false
        const rows = yield* decodeRows(IdRow)(sql`DELETE FROM dead_letters WHERE project_id = ${projectId} AND id = ${id} RETURNING id`)
        return rows.length > 0
      }, mapSqlError)

      return DeadLetters.of({ list, get, replay, remove })
    })
  )
}
