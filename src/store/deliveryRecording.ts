/**
 * The delivery rows' order per (destination, contact), and recording new deliveries (Destinations'
 * engine side): the pairs' advisory locks, a contact's head (its one ready delivery), and the recording
 * statement, which inserts each delivery already ready or not, and, for the recording worker's pumps,
 * already claimed: a fresh delivery is attempted as soon as its transaction commits, with no update of
 * its row and no claim in between.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import type { ClaimedDelivery, NewDelivery } from "./destinationTypes.ts"

/** The `webhook-id` of an event's delivery to a destination: the same however often the event is seen. */
export const deliveryId = (destinationId: string, eventId: string): string => {
  const hex = createHash("sha256").update(`${destinationId}:${eventId}`).digest("hex")
  // An RFC 9562 version 8 (custom) UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${
    hex.slice(17, 20)
  }-${hex.slice(20, 32)}`
}

/** The advisory lock class of (destination, contact) pairs (pg_advisory_xact_lock(class, bucket)), and its buckets. */
const LOCK_CLASS = 37_001
const LOCK_BUCKETS = 256

type Pairs = ReadonlyArray<{ readonly d: string; readonly c: string }>

/** What a recording did: the destinations that got new deliveries, those claimed for the recorder, and the destinations with ready ones left to claim. */
export interface Recorded {
  readonly recorded: ReadonlyArray<string>
  readonly claimed: ReadonlyArray<ClaimedDelivery>
  readonly waiting: ReadonlyArray<string>
}

export const deliveryRecording = (sql: SqlClient.SqlClient) => {
  /**
   * Serializes, per (destination, contact), everything that decides which delivery is the contact's
   * ready one: recording (in whatever worker), settling one for good, replaying. Each takes the pair's
   * transaction-level advisory lock first, so its next statement sees what the other committed (a
   * settlement racing a recording could otherwise leave the recorded delivery never ready, and two
   * workers recording one contact's deliveries at once could both mark theirs ready). The pairs share
   * LOCK_BUCKETS locks, taken in ascending order (no deadlock, a bounded number per transaction).
   */
  const lockPairs = (pairs: Pairs) =>
    pairs.length === 0 ? Effect.void : sql`
      SELECT pg_advisory_xact_lock(${LOCK_CLASS}, k) FROM (
        SELECT DISTINCT hashtext((p->>'d') || ':' || (p->>'c')) & ${LOCK_BUCKETS - 1} AS k
        FROM jsonb_array_elements(${JSON.stringify(pairs)}::jsonb) AS p
        ORDER BY k) buckets`.pipe(Effect.asVoid)
  const lockAllPairs = sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, k) FROM generate_series(0, ${LOCK_BUCKETS - 1}) AS k ORDER BY k`
    .pipe(Effect.asVoid)

  /**
   * Marks, for each (destination, contact) pair, its earliest open delivery ready and the others not:
   * after some were replayed.
   */
  const markHeads = (pairs: Pairs) =>
    pairs.length === 0 ? Effect.void : sql`
      WITH pairs AS (
        SELECT DISTINCT (p->>'d')::uuid AS destination_id, (p->>'c')::uuid AS contact_id
        FROM jsonb_array_elements(${JSON.stringify(pairs)}::jsonb) AS p
      ), heads AS (
        SELECT pairs.destination_id, pairs.contact_id, h.id AS head
        FROM pairs CROSS JOIN LATERAL (
          SELECT id FROM destination_deliveries o
          WHERE o.destination_id = pairs.destination_id AND o.contact_id = pairs.contact_id AND o.status IN ('pending', 'failed')
          ORDER BY o.seq LIMIT 1
        ) h
      )
      UPDATE destination_deliveries x SET ready = (x.id = heads.head)
      FROM heads
      WHERE x.destination_id = heads.destination_id AND x.contact_id = heads.contact_id
        AND x.status IN ('pending', 'failed') AND x.ready <> (x.id = heads.head)`.pipe(Effect.asVoid)

  /**
   * Records deliveries (a repeat of one already recorded is ignored), in the order given. Under the pairs'
   * locks, a delivery is inserted ready when it is its contact's earliest open one: no open delivery of the
   * pair is there, and none comes before it in this batch. Of a destination's ready ones, the first
   * `rooms[destination]` are inserted claimed (attempt 1, leased for `leaseMs`) and answered, for the
   * recorder to attempt once this has committed.
   */
  const recordAndClaim = (rows: ReadonlyArray<NewDelivery>, retryUntil: Date, rooms: ReadonlyMap<string, number>, leaseMs: number) =>
    Effect.gen(function*() {
      if (rows.length === 0) return { recorded: [], claimed: [], waiting: [] } satisfies Recorded
      const items = new Map<string, { id: string; d: string; p: string; e: string; t: string; c: string | null; b: string; a: string }>()
      for (const row of rows) {
        const id = deliveryId(row.destinationId, row.eventId)
        if (!items.has(id)) {
          items.set(id, {
            id,
            d: row.destinationId,
            p: row.projectId,
            e: row.eventId,
            t: row.eventType,
            c: row.contactId,
            b: row.body,
            a: row.eventAt
          })
        }
      }
      const room: Record<string, number> = {}
      for (const [destinationId, n] of rooms) if (n > 0) room[destinationId] = n
      return yield* sql.withTransaction(Effect.gen(function*() {
        yield* lockPairs([...items.values()].flatMap((item) => (item.c === null ? [] : [{ d: item.d, c: item.c }])))
        const inserted = yield* sql<{
          id: string
          destination_id: string
          ready: boolean
          claimed: boolean
          url: string | null
          secret: string | null
          previous_secret: string | null
        }>`
          WITH input AS (
            SELECT (x->>'id')::uuid AS id, (x->>'d')::uuid AS d, (x->>'p')::uuid AS p, x->>'e' AS e, x->>'t' AS t,
                   (x->>'c')::uuid AS c, x->>'b' AS b, (x->>'a')::timestamptz AS a, t.n
            FROM jsonb_array_elements(${JSON.stringify([...items.values()])}::jsonb) WITH ORDINALITY AS t(x, n)
          ), fresh AS (
            SELECT i.*, i.c IS NULL OR (
                     row_number() OVER (PARTITION BY i.d, i.c ORDER BY i.n) = 1
                     AND NOT EXISTS (SELECT 1 FROM destination_deliveries o
                                     WHERE o.destination_id = i.d AND o.contact_id = i.c AND o.status IN ('pending', 'failed'))
                   ) AS ready
            FROM input i
            WHERE EXISTS (SELECT 1 FROM destinations d WHERE d.id = i.d AND d.enabled)
              AND NOT EXISTS (SELECT 1 FROM destination_deliveries x WHERE x.id = i.id)
          ), ranked AS (
            SELECT f.*, f.ready AND row_number() OVER (PARTITION BY f.d, f.ready ORDER BY f.n)
                          <= coalesce((${JSON.stringify(room)}::jsonb ->> f.d::text)::int, 0) AS claimed
            FROM fresh f
          ), ins AS (
            INSERT INTO destination_deliveries (id, destination_id, project_id, event_id, event_type, contact_id, payload, event_at,
                                                retry_until, ready, attempts, claimed_until)
            SELECT id, d, p, e, t, c, to_jsonb(b), a, ${retryUntil}, ready, CASE WHEN claimed THEN 1 ELSE 0 END,
                   CASE WHEN claimed THEN clock_timestamp() + make_interval(secs => ${leaseMs / 1000}) END
            FROM ranked ORDER BY n
            ON CONFLICT (id) DO NOTHING
            RETURNING id, destination_id, seq, ready, claimed_until IS NOT NULL AS claimed
          )
          SELECT ins.id, ins.destination_id, ins.ready, ins.claimed, d.url, d.secret,
                 CASE WHEN d.previous_secret_expires_at > now() THEN d.previous_secret END AS previous_secret
          FROM ins LEFT JOIN destinations d ON ins.claimed AND d.id = ins.destination_id
          ORDER BY ins.seq`
        const claimed: Array<ClaimedDelivery> = []
        const waiting = new Set<string>()
        for (const row of inserted) {
          const item = items.get(row.id)
          if (row.claimed && item !== undefined && row.url !== null && row.secret !== null) {
            claimed.push({
              id: row.id,
              destinationId: row.destination_id,
              contactId: item.c,
              url: row.url,
              secrets: row.previous_secret === null ? [row.secret] : [row.secret, row.previous_secret],
              body: item.b,
              eventAt: new Date(item.a),
              attempts: 1,
              retryUntil,
              test: item.t === "destination.test"
            })
          } else if (row.ready) {
            waiting.add(row.destination_id)
          }
        }
        return { recorded: [...new Set(inserted.map((row) => row.destination_id))], claimed, waiting: [...waiting] } satisfies Recorded
      }))
    })

  return { lockPairs, lockAllPairs, markHeads, recordAndClaim }
}
