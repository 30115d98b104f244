/**
 * Event destinations as the api reads and changes them, and their delivery log (store/Destinations.ts):
 * every query here is scoped to the caller's project.
 */
import { Clock, Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { InvalidCursor } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { isUuid } from "../domain/uuid.ts"
import { pgArray } from "../lib/pgArray.ts"
import { newWebhookSecret } from "../lib/standardWebhooks.ts"
import { decodeRows, IdRow, iso, NullableTimestamp, Timestamp } from "./columns.ts"
import { decodeTimeCursor, encodeCursor, timeKeySql } from "./cursor.ts"
import { deliveryRecording } from "./deliveryRecording.ts"
import {
  DELIVERY_STATUSES,
  type DeliveryStatus,
  type DeliveryView,
  type DestinationInput,
  type DestinationView
} from "./destinationTypes.ts"
import { mapSqlError } from "./PersistenceError.ts"

/** A destination with its delivery counts, as `selectDestinations` selects it. */
const DestinationRow = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.String),
  enabled: Schema.Boolean,
  disabled_at: NullableTimestamp,
  disabled_reason: Schema.NullOr(Schema.String),
  consecutive_failures: Schema.Number,
  secret_rotated_at: NullableTimestamp,
  previous_secret_expires_at: NullableTimestamp,
  last_success_at: NullableTimestamp,
  last_failure_at: NullableTimestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
  pending: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  parked: Schema.Number
})
type DestinationRow = typeof DestinationRow.Type

/** The view at `now` (a previous secret past its overlap is no longer shown). */
const toDestination = (row: DestinationRow, now: number): DestinationView => ({
  id: row.id,
  url: row.url,
  description: row.description,
  events: [...row.events],
  enabled: row.enabled,
  disabledAt: row.disabled_at,
  disabledReason: row.disabled_reason,
  consecutiveFailures: row.consecutive_failures,
  secretRotatedAt: row.secret_rotated_at,
  previousSecretExpiresAt: row.previous_secret_expires_at !== null && Date.parse(row.previous_secret_expires_at) > now
    ? row.previous_secret_expires_at
    : null,
  stats: {
    pending: row.pending,
    succeeded: row.succeeded,
    failed: row.failed,
    parked: row.parked,
    lastSuccessAt: row.last_success_at,
    lastFailureAt: row.last_failure_at
  },
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

/** A `destination_deliveries` row as DELIVERY_COLUMNS select it. */
const DeliveryRow = Schema.Struct({
  id: Schema.String,
  destination_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  contact_id: Schema.NullOr(Schema.String),
  status: Schema.Literals(DELIVERY_STATUSES),
  attempts: Schema.Number,
  last_status_code: Schema.NullOr(Schema.Number),
  latency_ms: Schema.NullOr(Schema.Number),
  response_excerpt: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  next_attempt_at: Timestamp,
  replays: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
})
type DeliveryRow = typeof DeliveryRow.Type

const PagedDeliveryRow = Schema.Struct({ ...DeliveryRow.fields, time_key: Schema.String })

const toDelivery = (row: DeliveryRow): DeliveryView => ({
  id: row.id,
  destinationId: row.destination_id,
  eventId: row.event_id,
  eventType: row.event_type,
  contactId: row.contact_id,
  status: row.status,
  attempts: row.attempts,
  lastStatusCode: row.last_status_code,
  latencyMs: row.latency_ms,
  responseExcerpt: row.response_excerpt,
  error: row.error,
  nextAttemptAt: row.status === "pending" || row.status === "failed" ? row.next_attempt_at : null,
  replays: row.replays,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const DELIVERY_COLUMNS = `id, destination_id, event_id, event_type, contact_id, status, attempts, last_status_code, latency_ms,
  response_excerpt, error, next_attempt_at, replays, created_at, updated_at`

export const destinationRecords = (sql: SqlClient.SqlClient) => {
  const { lockAllPairs, markHeads } = deliveryRecording(sql)

  const destinationRows = decodeRows(DestinationRow)
  const deliveryRows = decodeRows(DeliveryRow)
  const ids = decodeRows(IdRow)

  const selectDestinations = (where: ReturnType<typeof sql.and>) =>
    destinationRows(sql`
    SELECT d.id, d.url, d.description, d.events, d.enabled, d.disabled_at, d.disabled_reason, d.consecutive_failures,
           d.secret_rotated_at, d.previous_secret_expires_at, d.last_success_at, d.last_failure_at, d.created_at, d.updated_at,
           coalesce(s.pending, 0)::int AS pending, coalesce(s.succeeded, 0)::int AS succeeded,
           coalesce(s.failed, 0)::int AS failed, coalesce(s.parked, 0)::int AS parked
    FROM destinations d
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE status = 'pending') AS pending, count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
             count(*) FILTER (WHERE status = 'failed') AS failed, count(*) FILTER (WHERE status = 'parked') AS parked
      FROM destination_deliveries x WHERE x.destination_id = d.id
    ) s ON true
    WHERE ${where}
    ORDER BY d.created_at, d.id`)

  const getRow = (projectId: string, id: string) =>
    isUuid(id)
      ? Effect.map(selectDestinations(sql.and([sql`d.project_id = ${projectId}`, sql`d.id = ${id}`])), (rows) => rows[0])
      : Effect.succeed(undefined)

  const create = Effect.fn("Destinations.create")(function*(projectId: string, input: DestinationInput) {
    const id = uuidv7()
    const secret = newWebhookSecret()
    const enabled = input.enabled ?? true
    const now = yield* Clock.currentTimeMillis
    yield* sql`
      INSERT INTO destinations (id, project_id, url, description, events, enabled, disabled_at, disabled_reason, secret)
      VALUES (${id}, ${projectId}, ${input.url}, ${input.description ?? null}, ${pgArray(input.events)}::text[], ${enabled},
              ${enabled ? null : iso(now)}::timestamptz, ${enabled ? null : "manual"}, ${secret})`
    const row = yield* getRow(projectId, id)
    return { ...toDestination(row!, now), secret }
  }, mapSqlError)

  const list = Effect.fn("Destinations.list")(function*(projectId: string) {
    const rows = yield* selectDestinations(sql.and([sql`d.project_id = ${projectId}`]))
    const now = yield* Clock.currentTimeMillis
    return rows.map((row) => toDestination(row, now))
  }, mapSqlError)

  const get = Effect.fn("Destinations.get")(function*(projectId: string, id: string) {
    const row = yield* getRow(projectId, id)
    return row ? toDestination(row, yield* Clock.currentTimeMillis) : undefined
  }, mapSqlError)

  const update = Effect.fn("Destinations.update")(function*(projectId: string, id: string, patch: Partial<DestinationInput>) {
    if (!isUuid(id)) return undefined
    const sets = [sql`updated_at = now()`]
    if (patch.url !== undefined) sets.push(sql`url = ${patch.url}`)
    if (patch.events !== undefined) sets.push(sql`events = ${pgArray(patch.events)}::text[]`)
    if (patch.description !== undefined) sets.push(sql`description = ${patch.description}`)
    if (patch.enabled === true) {
      // Re-enabling (also after an automatic disable) starts a new run of failures.
      sets.push(sql`enabled = true`, sql`disabled_at = NULL`, sql`disabled_reason = NULL`, sql`consecutive_failures = 0`)
    } else if (patch.enabled === false) {
      sets.push(
        sql`enabled = false`,
        sql`disabled_at = coalesce(disabled_at, now())`,
        sql`disabled_reason = coalesce(disabled_reason, 'manual')`
      )
    }
    const updated = yield* ids(sql`UPDATE destinations SET ${sql.csv(sets)} WHERE project_id = ${projectId} AND id = ${id} RETURNING id`)
    if (updated.length === 0) return undefined
    const row = yield* getRow(projectId, id)
    return row ? toDestination(row, yield* Clock.currentTimeMillis) : undefined
  }, mapSqlError)

  const remove = Effect.fn("Destinations.remove")(function*(projectId: string, id: string) {
    if (!isUuid(id)) return false
    return (yield* ids(sql`DELETE FROM destinations WHERE project_id = ${projectId} AND id = ${id} RETURNING id`)).length > 0
  }, mapSqlError)

  const rotateSecret = Effect.fn("Destinations.rotateSecret")(function*(projectId: string, id: string, overlapSeconds: number) {
    if (!isUuid(id)) return undefined
    const secret = newWebhookSecret()
    const updated = yield* ids(sql`
      UPDATE destinations SET previous_secret = secret, secret = ${secret}, secret_rotated_at = now(), updated_at = now(),
             previous_secret_expires_at = now() + make_interval(secs => ${overlapSeconds})
      WHERE project_id = ${projectId} AND id = ${id} RETURNING id`)
    if (updated.length === 0) return undefined
    const row = yield* getRow(projectId, id)
    return { ...toDestination(row!, yield* Clock.currentTimeMillis), secret }
  }, mapSqlError)

  const owns = (projectId: string, id: string) =>
    isUuid(id)
      ? Effect.map(sql`SELECT 1 FROM destinations WHERE project_id = ${projectId} AND id = ${id}`, (rows) => rows.length > 0)
      : Effect.succeed(false)

  const deliveries = Effect.fn("Destinations.deliveries")(function*(projectId: string, id: string, query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly status: DeliveryStatus | undefined
  }) {
    const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor)
    if (query.cursor !== undefined && after === undefined) return yield* InvalidCursor.of("The cursor is not one this list returned")
    if (!(yield* owns(projectId, id))) return undefined
    const filters = [sql`destination_id = ${id}`]
    if (query.status !== undefined) filters.push(sql`status = ${query.status}`)
    if (after !== undefined) filters.push(sql`(created_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`)
    const rows = yield* decodeRows(PagedDeliveryRow)(sql`
      SELECT ${sql.literal(DELIVERY_COLUMNS)}, ${sql.literal(timeKeySql("created_at"))} AS time_key
      FROM destination_deliveries WHERE ${sql.and(filters)}
      ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`)
    const hasMore = rows.length > query.limit
    const page = rows.slice(0, query.limit)
    const last = page[page.length - 1]
    return { data: page.map(toDelivery), cursor: hasMore && last ? encodeCursor([last.time_key, last.id]) : null, hasMore }
  }, mapSqlError)

  const delivery = Effect.fn("Destinations.delivery")(function*(projectId: string, destinationId: string, id: string) {
    if (!isUuid(destinationId) || !isUuid(id)) return undefined
    const [row] = yield* deliveryRows(sql`
      SELECT ${sql.literal(DELIVERY_COLUMNS)} FROM destination_deliveries
      WHERE project_id = ${projectId} AND destination_id = ${destinationId} AND id = ${id}`)
    return row ? toDelivery(row) : undefined
  }, mapSqlError)

  const replay = Effect.fn("Destinations.replay")(function*(
    projectId: string,
    destinationId: string,
    which: { readonly id: string } | { readonly from: Date; readonly to: Date },
    retryUntil: Date
  ) {
    if (!(yield* owns(projectId, destinationId))) return undefined
    if ("id" in which && !isUuid(which.id)) return undefined
    const rows = yield* sql.withTransaction(Effect.gen(function*() {
      yield* lockAllPairs
      const reopened = yield* deliveryRows(sql`
        UPDATE destination_deliveries SET status = 'pending', next_attempt_at = now(), retry_until = ${retryUntil},
               replays = replays + 1, claimed_until = NULL, updated_at = now(), ready = contact_id IS NULL
        WHERE destination_id = ${destinationId} AND event_type <> 'destination.test' AND ${
        "id" in which ? sql`id = ${which.id}` : sql`event_at >= ${which.from} AND event_at < ${which.to}`
      }
        RETURNING ${sql.literal(DELIVERY_COLUMNS)}`)
      // Each contact's earliest open delivery goes first again, the replayed ones included.
      yield* markHeads(reopened.flatMap((row) => (row.contact_id === null ? [] : [{ d: destinationId, c: row.contact_id }])))
      return reopened
    }))
    if ("id" in which && rows.length === 0) return undefined
    return rows.map(toDelivery)
  }, mapSqlError)

  return { create, list, get, update, remove, rotateSecret, deliveries, delivery, replay }
}
