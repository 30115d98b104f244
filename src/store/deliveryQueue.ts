/**
 * The delivery engine's side of the store (store/Destinations.ts): the destinations events are matched
 * against, recording deliveries (deliveryRecording.ts), claiming due ones, settling attempts, the due
 * loop's queries, test events and the log's retention.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { isUuid } from "../domain/uuid.ts"
import { pgArray } from "../lib/pgArray.ts"
import { deliveryId, deliveryRecording } from "./deliveryRecording.ts"
import type { ActiveDestination, AttemptOutcome, ClaimedDelivery, DeliveryStatus, NewDelivery } from "./destinationTypes.ts"
import { mapSqlError } from "./PersistenceError.ts"

export const deliveryQueue = (sql: SqlClient.SqlClient) => {
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

  const { lockPairs, recordAndClaim: recordWith } = deliveryRecording(sql)
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

  return { active, activeIn, record, recordAndClaim, claim, settle, settleMany, due, nextDueIn, recordTest, prune }
}
