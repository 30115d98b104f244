/**
 * Event destinations and their delivery log (migration 0028). The api reads and changes destinations
 * through it; the worker's delivery engine (src/destinations) records deliveries, claims due ones per
 * destination and settles their attempts. Every API-facing query is scoped to the caller's project.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidCursor } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { isUuid } from "../domain/uuid.ts"
import { pgArray } from "../lib/pgArray.ts"
import { newWebhookSecret } from "../lib/standardWebhooks.ts"
import { decodeTimeCursor, encodeCursor, timeKeySql } from "./cursor.ts"
import { deliveryId, deliveryRecording, type Recorded } from "./deliveryRecording.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export { deliveryId, type Recorded }

export type DeliveryStatus = "pending" | "succeeded" | "failed" | "parked"

export interface DestinationView {
  readonly id: string
  readonly url: string
  readonly description: string | null
  readonly events: ReadonlyArray<string>
  readonly enabled: boolean
  readonly disabledAt: string | null
  readonly disabledReason: string | null
  readonly consecutiveFailures: number
  readonly secretRotatedAt: string | null
  readonly previousSecretExpiresAt: string | null
  readonly stats: {
    readonly pending: number
    readonly succeeded: number
    readonly failed: number
    readonly parked: number
    readonly lastSuccessAt: string | null
    readonly lastFailureAt: string | null
  }
  readonly createdAt: string
  readonly updatedAt: string
}

export interface DeliveryView {
  readonly id: string
  readonly destinationId: string
  readonly eventId: string
  readonly eventType: string
  readonly contactId: string | null
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly latencyMs: number | null
  readonly responseExcerpt: string | null
  readonly error: string | null
  readonly nextAttemptAt: string | null
  readonly replays: number
  readonly createdAt: string
  readonly updatedAt: string
}

/** What the engine matches events against: a project's enabled destinations. */
export interface ActiveDestination {
  readonly id: string
  readonly projectId: string
  readonly events: ReadonlyArray<string>
}

/** A delivery the engine is about to attempt, with what it signs and sends. */
export interface ClaimedDelivery {
  readonly id: string
  readonly destinationId: string
  readonly contactId: string | null
  readonly url: string
  readonly secrets: ReadonlyArray<string>
  readonly body: string
  readonly eventAt: Date
  readonly attempts: number
  readonly retryUntil: Date
  readonly test: boolean
}

export interface NewDelivery {
  readonly destinationId: string
  readonly projectId: string
  readonly eventId: string
  readonly eventType: string
  readonly contactId: string | null
  readonly body: string
  readonly eventAt: string
}

export interface AttemptOutcome {
  readonly ok: boolean
  /** No more attempts (a refused address, the retry period over, a test event): parked when not ok. */
  readonly final: boolean
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly excerpt: string | null
  readonly error: string | null
  readonly nextAttemptAt: Date | null
}

const iso = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString())

interface DestinationRow {
  id: string
  url: string
  description: string | null
  events: ReadonlyArray<string>
  enabled: boolean
  disabled_at: Date | null
  disabled_reason: string | null
  consecutive_failures: number
  secret_rotated_at: Date | null
  previous_secret_expires_at: Date | null
  last_success_at: Date | null
  last_failure_at: Date | null
  created_at: Date
  updated_at: Date
  pending: number
  succeeded: number
  failed: number
  parked: number
  secret?: string
}

const toDestination = (row: DestinationRow): DestinationView => ({
  id: row.id,
  url: row.url,
  description: row.description,
  events: [...row.events],
  enabled: row.enabled,
  disabledAt: iso(row.disabled_at),
  disabledReason: row.disabled_reason,
  consecutiveFailures: row.consecutive_failures,
  secretRotatedAt: iso(row.secret_rotated_at),
  previousSecretExpiresAt: row.previous_secret_expires_at && new Date(row.previous_secret_expires_at) > new Date()
    ? iso(row.previous_secret_expires_at)
    : null,
  stats: {
    pending: row.pending,
    succeeded: row.succeeded,
    failed: row.failed,
    parked: row.parked,
    lastSuccessAt: iso(row.last_success_at),
    lastFailureAt: iso(row.last_failure_at)
  },
  createdAt: iso(row.created_at)!,
  updatedAt: iso(row.updated_at)!
})

interface DeliveryRow {
  id: string
  destination_id: string
  event_id: string
  event_type: string
  contact_id: string | null
  status: DeliveryStatus
  attempts: number
  last_status_code: number | null
  latency_ms: number | null
  response_excerpt: string | null
  error: string | null
  next_attempt_at: Date
  replays: number
  created_at: Date
  updated_at: Date
  time_key?: string
}

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
  nextAttemptAt: row.status === "pending" || row.status === "failed" ? iso(row.next_attempt_at) : null,
  replays: row.replays,
  createdAt: iso(row.created_at)!,
  updatedAt: iso(row.updated_at)!
})

const DELIVERY_COLUMNS = `id, destination_id, event_id, event_type, contact_id, status, attempts, last_status_code, latency_ms,
  response_excerpt, error, next_attempt_at, replays, created_at, updated_at`

export interface DestinationInput {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description?: string | null | undefined
  readonly enabled?: boolean | undefined
}

export class Destinations extends Context.Service<Destinations, {
  readonly create: (
    projectId: string,
    input: DestinationInput
  ) => Effect.Effect<DestinationView & { readonly secret: string }, PersistenceError>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<DestinationView>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<DestinationView | undefined, PersistenceError>
  readonly update: (
    projectId: string,
    id: string,
    patch: Partial<DestinationInput>
  ) => Effect.Effect<DestinationView | undefined, PersistenceError>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  readonly rotateSecret: (
    projectId: string,
    id: string,
    overlapSeconds: number
  ) => Effect.Effect<(DestinationView & { readonly secret: string }) | undefined, PersistenceError>
  readonly deliveries: (projectId: string, id: string, query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly status: DeliveryStatus | undefined
  }) => Effect.Effect<
    { readonly data: ReadonlyArray<DeliveryView>; readonly cursor: string | null; readonly hasMore: boolean } | undefined,
    InvalidCursor | PersistenceError
  >
  readonly delivery: (projectId: string, destinationId: string, id: string) => Effect.Effect<DeliveryView | undefined, PersistenceError>
  /** Puts deliveries back to pending (a new retry period from now); answers those it found. */
  readonly replay: (
    projectId: string,
    destinationId: string,
    which: { readonly id: string } | { readonly from: Date; readonly to: Date },
    retryUntil: Date
  ) => Effect.Effect<ReadonlyArray<DeliveryView> | undefined, PersistenceError>

  // The engine's side.
  readonly active: (projectId: string) => Effect.Effect<ReadonlyArray<ActiveDestination>, PersistenceError>
  /** The enabled destinations of each of these projects (one query). */
  readonly activeIn: (
    projectIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<ActiveDestination>>, PersistenceError>
  /** Records deliveries (a repeat of one already recorded is ignored); answers the destinations that got new ones. */
  readonly record: (deliveries: ReadonlyArray<NewDelivery>, retryUntil: Date) => Effect.Effect<ReadonlyArray<string>, PersistenceError>
  /** Records deliveries, and claims for the caller, for `leaseMs`, up to `rooms[destination]` of each destination's ready ones. */
  readonly recordAndClaim: (
    deliveries: ReadonlyArray<NewDelivery>,
    retryUntil: Date,
    rooms: ReadonlyMap<string, number>,
    leaseMs: number
  ) => Effect.Effect<Recorded, PersistenceError>
  /** Claims up to `room` due deliveries of an enabled destination, each a contact's earliest open one, for `leaseMs`. */
  readonly claim: (destinationId: string, room: number, leaseMs: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, PersistenceError>
  /** Records an attempt's outcome; answers whether this failure disabled the destination. */
  readonly settle: (delivery: ClaimedDelivery, outcome: AttemptOutcome, disableAfter: number) => Effect.Effect<boolean, PersistenceError>
  /** Records the outcomes of one destination's attempts, in the order they ended, in one statement; answers whether they disabled it. */
  readonly settleMany: (
    destinationId: string,
    settled: ReadonlyArray<{ readonly delivery: ClaimedDelivery; readonly outcome: AttemptOutcome }>,
    disableAfter: number
  ) => Effect.Effect<boolean, PersistenceError>
  /** Enabled destinations with deliveries due now (not in flight). */
  readonly due: Effect.Effect<ReadonlyArray<string>, PersistenceError>
  /** Milliseconds until the next delivery is due (≤ 0: now), undefined when none is open. */
  readonly nextDueIn: Effect.Effect<number | undefined, PersistenceError>
  /** Deletes up to `limit` finished deliveries created more than `days` days ago; answers how many. */
  readonly prune: (days: number, limit: number) => Effect.Effect<number, PersistenceError>
  /** A test event's delivery, recorded already claimed. */
  readonly recordTest: (
    projectId: string,
    destinationId: string,
    eventId: string,
    body: string,
    eventAt: string
  ) => Effect.Effect<ClaimedDelivery | undefined, PersistenceError>
}>()("app/store/Destinations") {
  static readonly layer = Layer.effect(
    Destinations,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const selectDestinations = (where: ReturnType<typeof sql.and>) =>
        sql<DestinationRow>`
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
        ORDER BY d.created_at, d.id`

      const getRow = (projectId: string, id: string) =>
        isUuid(id)
          ? Effect.map(selectDestinations(sql.and([sql`d.project_id = ${projectId}`, sql`d.id = ${id}`])), (rows) => rows[0])
          : Effect.succeed(undefined)

      const create = Effect.fn("Destinations.create")(function*(projectId: string, input: DestinationInput) {
        const id = uuidv7()
        const secret = newWebhookSecret()
        const enabled = input.enabled ?? true
        yield* sql`
          INSERT INTO destinations (id, project_id, url, description, events, enabled, disabled_at, disabled_reason, secret)
          VALUES (${id}, ${projectId}, ${input.url}, ${input.description ?? null}, ${pgArray(input.events)}::text[], ${enabled},
                  ${enabled ? null : new Date()}, ${enabled ? null : "manual"}, ${secret})`
        const row = yield* getRow(projectId, id)
        return { ...toDestination(row!), secret }
      }, mapSqlError)

      const list = Effect.fn("Destinations.list")(function*(projectId: string) {
        return (yield* selectDestinations(sql.and([sql`d.project_id = ${projectId}`]))).map(toDestination)
      }, mapSqlError)

      const get = Effect.fn("Destinations.get")(function*(projectId: string, id: string) {
        const row = yield* getRow(projectId, id)
        return row ? toDestination(row) : undefined
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
        const updated = yield* sql`UPDATE destinations SET ${sql.csv(sets)} WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        if (updated.length === 0) return undefined
        const row = yield* getRow(projectId, id)
        return row ? toDestination(row) : undefined
      }, mapSqlError)

      const remove = Effect.fn("Destinations.remove")(function*(projectId: string, id: string) {
        if (!isUuid(id)) return false
        return (yield* sql`DELETE FROM destinations WHERE project_id = ${projectId} AND id = ${id} RETURNING id`).length > 0
      }, mapSqlError)

      const rotateSecret = Effect.fn("Destinations.rotateSecret")(function*(projectId: string, id: string, overlapSeconds: number) {
        if (!isUuid(id)) return undefined
        const secret = newWebhookSecret()
        const updated = yield* sql`
          UPDATE destinations SET previous_secret = secret, secret = ${secret}, secret_rotated_at = now(), updated_at = now(),
                 previous_secret_expires_at = now() + make_interval(secs => ${overlapSeconds})
          WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        if (updated.length === 0) return undefined
        const row = yield* getRow(projectId, id)
        return { ...toDestination(row!), secret }
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
        const rows = yield* sql<DeliveryRow>`
          SELECT ${sql.literal(DELIVERY_COLUMNS)}, ${sql.literal(timeKeySql("created_at"))} AS time_key
          FROM destination_deliveries WHERE ${sql.and(filters)}
          ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
        const hasMore = rows.length > query.limit
        const page = rows.slice(0, query.limit)
        const last = page[page.length - 1]
        return { data: page.map(toDelivery), cursor: hasMore && last ? encodeCursor([last.time_key!, last.id]) : null, hasMore }
      }, mapSqlError)

      const delivery = Effect.fn("Destinations.delivery")(function*(projectId: string, destinationId: string, id: string) {
        if (!isUuid(destinationId) || !isUuid(id)) return undefined
        const [row] = yield* sql<DeliveryRow>`
          SELECT ${sql.literal(DELIVERY_COLUMNS)} FROM destination_deliveries
          WHERE project_id = ${projectId} AND destination_id = ${destinationId} AND id = ${id}`
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
          const reopened = yield* sql<DeliveryRow>`
            UPDATE destination_deliveries SET status = 'pending', next_attempt_at = now(), retry_until = ${retryUntil},
                   replays = replays + 1, claimed_until = NULL, updated_at = now(), ready = contact_id IS NULL
            WHERE destination_id = ${destinationId} AND event_type <> 'destination.test' AND ${
            "id" in which ? sql`id = ${which.id}` : sql`event_at >= ${which.from} AND event_at < ${which.to}`
          }
            RETURNING ${sql.literal(DELIVERY_COLUMNS)}`
          // Each contact's earliest open delivery goes first again, the replayed ones included.
          yield* markHeads(reopened.flatMap((row) => (row.contact_id === null ? [] : [{ d: destinationId, c: row.contact_id }])))
          return reopened
        }))
        if ("id" in which && rows.length === 0) return undefined
        return rows.map(toDelivery)
      }, mapSqlError)

      const activeIn = Effect.fn("Destinations.activeIn")(function*(projectIds: ReadonlyArray<string>) {
        const byProject = new Map<string, Array<ActiveDestination>>(projectIds.map((id) => [id, []]))
        const uuids = projectIds.filter(isUuid)
        if (uuids.length === 0) return byProject
        const rows = yield* sql<{ id: string; project_id: string; events: ReadonlyArray<string> }>`
          SELECT id, project_id, events FROM destinations
          WHERE project_id IN (SELECT unnest(${pgArray(uuids)}::uuid[])) AND enabled ORDER BY created_at`
        for (const row of rows) byProject.get(row.project_id)?.push({ id: row.id, projectId: row.project_id, events: [...row.events] })
        return byProject
      }, mapSqlError)

      const active = Effect.fn("Destinations.active")(function*(projectId: string) {
        const rows = yield* sql<{ id: string; events: ReadonlyArray<string> }>`
          SELECT id, events FROM destinations WHERE project_id = ${projectId} AND enabled ORDER BY created_at`
        return rows.map((row) => ({ id: row.id, projectId, events: [...row.events] }))
      }, mapSqlError)

      const { lockAllPairs, lockPairs, markHeads, recordAndClaim: recordWith } = deliveryRecording(sql)
      const recordAndClaim = Effect.fn("Destinations.recordAndClaim")(
        (rows: ReadonlyArray<NewDelivery>, retryUntil: Date, rooms: ReadonlyMap<string, number>, leaseMs: number) =>
          mapSqlError(recordWith(rows, retryUntil, rooms, leaseMs))
      )
      const record = (rows: ReadonlyArray<NewDelivery>, retryUntil: Date) =>
        Effect.map(recordAndClaim(rows, retryUntil, new Map(), 0), (done) => done.recorded)

      interface ClaimRow {
        id: string
        destination_id: string
        contact_id: string | null
        url: string
        secret: string
        previous_secret: string | null
        payload: string
        event_at: Date
        attempts: number
        retry_until: Date
        event_type: string
      }
      const toClaimed = (row: ClaimRow): ClaimedDelivery => ({
        id: row.id,
        destinationId: row.destination_id,
        contactId: row.contact_id,
        url: row.url,
        secrets: row.previous_secret === null ? [row.secret] : [row.secret, row.previous_secret],
        body: typeof row.payload === "string" ? row.payload : JSON.stringify(row.payload),
        eventAt: new Date(row.event_at),
        attempts: row.attempts,
        retryUntil: new Date(row.retry_until),
        test: row.event_type === "destination.test"
      })

      const claim = Effect.fn("Destinations.claim")(function*(destinationId: string, room: number, leaseMs: number) {
        if (room <= 0) return []
        const rows = yield* sql<ClaimRow>`
          WITH picked AS (
            SELECT x.id FROM destination_deliveries x
            WHERE x.destination_id = ${destinationId} AND x.ready AND x.status IN ('pending', 'failed') AND x.next_attempt_at <= now()
              AND (x.claimed_until IS NULL OR x.claimed_until < now())
              AND EXISTS (SELECT 1 FROM destinations d WHERE d.id = ${destinationId} AND d.enabled)
            ORDER BY x.seq LIMIT ${room}
            FOR UPDATE OF x SKIP LOCKED)
          UPDATE destination_deliveries x SET claimed_until = now() + make_interval(secs => ${leaseMs / 1000}),
                 attempts = x.attempts + 1
          FROM picked, destinations d
          WHERE x.id = picked.id AND d.id = x.destination_id
          RETURNING x.id, x.destination_id, x.contact_id, d.url, d.secret,
                    CASE WHEN d.previous_secret_expires_at > now() THEN d.previous_secret END AS previous_secret,
                    x.payload #>> '{}' AS payload, x.event_at, x.attempts, x.retry_until, x.event_type`
        return rows.map(toClaimed)
      }, mapSqlError)

      /**
       * One statement for a batch of one destination's attempts: their outcomes; for each settled for good,
       * its contact's next open delivery made ready (under the pairs' locks, see lockPairs); and the
       * destination's run of failures, as the attempts ended in order.
       */
      const settleMany = Effect.fn("Destinations.settleMany")(function*(
        destinationId: string,
        settled: ReadonlyArray<{ readonly delivery: ClaimedDelivery; readonly outcome: AttemptOutcome }>,
        disableAfter: number
      ) {
        if (settled.length === 0) return false
        const rows = settled.map(({ delivery, outcome }) => {
          const status: DeliveryStatus = outcome.ok ? "succeeded" : outcome.final ? "parked" : "failed"
          return {
            id: delivery.id,
            c: delivery.contactId,
            status,
            promote: status !== "failed" && delivery.contactId !== null,
            code: outcome.statusCode,
            latency: outcome.ok ? outcome.latencyMs : null,
            excerpt: outcome.excerpt,
            error: outcome.error,
            next: outcome.nextAttemptAt?.toISOString() ?? null,
            test: delivery.test
          }
        })
        const promoted = rows.filter((row) => row.promote)
        // The destination's run of failures: the failed attempts after its last success in this batch.
        const counted = rows.filter((row) => !row.test)
        const lastSuccess = counted.findLastIndex((row) => row.status === "succeeded")
        const trailing = counted.length - lastSuccess - 1
        // A failure counts towards disabling; disabling happens on the attempt that completes the run.
        const failures = lastSuccess >= 0 ? sql`${trailing}::int` : sql`consecutive_failures + ${trailing}::int`
        const disabling = sql`enabled AND ${disableAfter}::int > 0 AND ${trailing}::int > 0 AND ${failures} >= ${disableAfter}::int`
        const destination = counted.length === 0
          ? sql`SELECT false AS disabled`
          : trailing === 0
          // The destination's row is shared by all its attempts: written when a run of failures ends, and its
          // last success at most once a second, so concurrent settlements do not queue on its lock.
          ? sql`UPDATE destinations SET consecutive_failures = 0, last_success_at = now()
                WHERE id = ${destinationId}
                  AND (consecutive_failures > 0 OR last_success_at IS NULL OR last_success_at < now() - interval '1 second')
                RETURNING false AS disabled`
          : sql`UPDATE destinations SET consecutive_failures = ${failures}, last_failure_at = now(),
                       last_success_at = CASE WHEN ${lastSuccess >= 0} THEN now() ELSE last_success_at END,
                       enabled = CASE WHEN ${disabling} THEN false ELSE enabled END,
                       disabled_at = CASE WHEN ${disabling} THEN now() ELSE disabled_at END,
                       disabled_reason = CASE WHEN ${disabling} THEN 'failures' ELSE disabled_reason END,
                       updated_at = CASE WHEN ${disabling} THEN now() ELSE updated_at END
                WHERE id = ${destinationId}
                RETURNING (disabled_reason = 'failures' AND disabled_at = now()) AS disabled`
        const statement = sql<{ disabled: boolean | null }>`
          WITH input AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS i(
              id uuid, c uuid, status text, promote boolean, code integer, latency integer, excerpt text, error text, next timestamptz)
          ), done AS (
            UPDATE destination_deliveries x SET status = i.status, claimed_until = NULL, updated_at = now(), ready = x.ready AND NOT i.promote,
                   last_status_code = i.code, latency_ms = coalesce(i.latency, x.latency_ms),
                   response_excerpt = i.excerpt, error = i.error, next_attempt_at = coalesce(i.next, x.next_attempt_at)
            FROM input i
            WHERE x.id = i.id AND x.destination_id = ${destinationId}
            RETURNING x.id
          ), promoted AS (
            -- The statement sees the rows as they were before it: the settled ones are left out by their ids.
            UPDATE destination_deliveries SET ready = true
            WHERE id IN (
              SELECT h.id FROM (SELECT DISTINCT c FROM input WHERE promote) p
              CROSS JOIN LATERAL (
                SELECT o.id FROM destination_deliveries o
                WHERE o.destination_id = ${destinationId} AND o.contact_id = p.c AND o.status IN ('pending', 'failed')
                  AND o.id NOT IN (SELECT id FROM input WHERE promote)
                ORDER BY o.seq LIMIT 1) h)
            RETURNING id
          ), destination AS (${destination})
          SELECT (SELECT disabled FROM destination) AS disabled, (SELECT count(*) FROM done) + (SELECT count(*) FROM promoted) AS touched`
        // Retries keep their place (one statement); settling for good hands over under the pairs' locks.
        const result = promoted.length > 0
          ? yield* sql.withTransaction(Effect.andThen(lockPairs(promoted.map((row) => ({ d: destinationId, c: row.c! }))), statement))
          : yield* statement
        return result[0]?.disabled === true
      }, mapSqlError)

      const settle = (delivery: ClaimedDelivery, outcome: AttemptOutcome, disableAfter: number) =>
        settleMany(delivery.destinationId, [{ delivery, outcome }], disableAfter)

      const due = Effect.map(
        sql<{ destination_id: string }>`
          SELECT DISTINCT x.destination_id FROM destination_deliveries x JOIN destinations d ON d.id = x.destination_id AND d.enabled
          WHERE x.ready AND x.status IN ('pending', 'failed') AND x.next_attempt_at <= now() AND (x.claimed_until IS NULL OR x.claimed_until < now())`,
        (rows) => rows.map((row) => row.destination_id)
      ).pipe(mapSqlError)

      const nextDueIn = Effect.map(
        sql<{ ms: number | null }>`
          SELECT (extract(epoch FROM min(greatest(x.next_attempt_at, coalesce(x.claimed_until, x.next_attempt_at))) - now()) * 1000)::float8 AS ms
          FROM destination_deliveries x JOIN destinations d ON d.id = x.destination_id AND d.enabled
          WHERE x.ready AND x.status IN ('pending', 'failed')`,
        (rows) => (rows[0]?.ms === null || rows[0] === undefined ? undefined : Number(rows[0].ms))
      ).pipe(mapSqlError)

      const recordTest = Effect.fn("Destinations.recordTest")(
        function*(projectId: string, destinationId: string, eventId: string, body: string, eventAt: string) {
          if (!isUuid(destinationId)) return undefined
          const [row] = yield* sql<ClaimRow>`
          INSERT INTO destination_deliveries (id, destination_id, project_id, event_id, event_type, contact_id, payload, event_at,
                                              retry_until, attempts, claimed_until)
          SELECT ${deliveryId(destinationId, eventId)}, d.id, d.project_id, ${eventId}, 'destination.test', NULL, to_jsonb(${body}::text),
                 ${eventAt}, now(), 1, now() + interval '5 minutes'
          FROM destinations d WHERE d.project_id = ${projectId} AND d.id = ${destinationId}
          RETURNING id, destination_id, contact_id, (SELECT url FROM destinations WHERE id = ${destinationId}) AS url,
                    (SELECT secret FROM destinations WHERE id = ${destinationId}) AS secret,
                    (SELECT CASE WHEN previous_secret_expires_at > now() THEN previous_secret END FROM destinations WHERE id = ${destinationId}) AS previous_secret,
                    payload #>> '{}' AS payload, event_at, attempts, retry_until, event_type`
          return row ? toClaimed(row) : undefined
        },
        mapSqlError
      )

      const prune = Effect.fn("Destinations.prune")(function*(days: number, limit: number) {
        const rows = yield* sql`
          DELETE FROM destination_deliveries WHERE id IN (
            SELECT id FROM destination_deliveries
            WHERE status IN ('succeeded', 'parked') AND created_at < now() - make_interval(days => ${days})
            ORDER BY created_at LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, mapSqlError)

      return Destinations.of({
        prune,
        create,
        list,
        get,
        update,
        remove,
        rotateSecret,
        deliveries,
        delivery,
        replay,
        active,
        activeIn,
        record,
        recordAndClaim,
        claim,
        settle,
        settleMany,
        due,
        nextDueIn,
        recordTest
      })
    })
  )
}
