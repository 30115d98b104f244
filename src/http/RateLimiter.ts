/**
 * Requests per minute per project (or user), never more than the limit across every api process: the
 * counters are fixed one-minute windows in Postgres. Concurrent checks are group-committed: while one
 * statement is in flight the next requests queue up and are counted together by the following
 * statement (one round trip per batch, not per request).
 *
 * - Limits under LEASED_FROM per minute are counted exactly: each request learns its position in the
 *   window, so `remaining` is exact and the last permit goes to whichever request comes first.
 * - Larger limits are leased: a process takes permits from the window's counter in blocks (0.5 % of the
 *   limit) and spends them in memory, taking the next block before the last runs out; a request waits
 *   for Postgres once a minute per process, not on every call. The window still never admits more than
 *   the limit (a block is only what the counter had left); near the limit a process may refuse while
 *   another still holds unspent permits (at most a block each), and `remaining` is this process's view.
 */
import { Context, Deferred, Duration, Effect, Layer, Queue, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"

export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Seconds until the window resets. */
  readonly resetSeconds: number
}

interface Pending {
  readonly projectId: string
  /** Requests this check counts for (a batch of events counts one per event), or a block of leased permits. */
  readonly count: number
  readonly windowStart: number
  /** The window's count once this item's `count` was added (its last position). */
  readonly counted: Deferred.Deferred<Counted>
}

interface Counted {
  readonly end: number
  readonly resetSeconds: number
}

/** Permits of one window leased by this process and not spent yet. */
interface Lease {
  readonly windowStart: number
  available: number
  /** The window's count when the last block was taken (for `remaining`). */
  counted: number
  /** The counter had less than a block left: nothing more to take this window. */
  exhausted: boolean
  /** A block being taken; checks that find too few permits wait for it. */
  taking: Deferred.Deferred<void> | undefined
}

const WINDOW_MS = 60_000
/** Limits per minute from which permits are leased in blocks rather than counted one by one. */
export const LEASED_FROM = 10_000
/** A leased block: 0.5 % of the minute's budget. */
const blockOf = (limit: number) => Math.max(1, Math.floor(limit / 200))
const resetSecondsOf = (windowStart: number, now: number) => Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000))

export class RateLimiter extends Context.Service<RateLimiter, {
  /** Counts `count` requests (default 1) against the project's window and says whether they fit. */
  readonly check: (projectId: string, count?: number) => Effect.Effect<RateDecision>
}>()("app/http/RateLimiter") {
  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { rateLimitPerMinute: limit } = yield* AppConfig
      const queue = yield* Queue.unbounded<Pending>()

      const countBatch = (batch: ReadonlyArray<Pending>) =>
        Effect.gen(function*() {
          const groups = new Map<string, Array<Pending>>()
          for (const item of batch) {
            const key = `${item.projectId}|${item.windowStart}`
            const group = groups.get(key)
            if (group) group.push(item)
            else groups.set(key, [item])
          }
          const rows = [...groups.values()].map((group) => ({
            project_id: group[0]!.projectId,
            window_start: new Date(group[0]!.windowStart).toISOString(),
            count: group.reduce((sum, item) => sum + item.count, 0)
          }))
          const counted = yield* sql<{ project_id: string; window_start: Date; count: number }>`
            INSERT INTO rate_limit_windows (project_id, window_start, count)
            SELECT (r->>'project_id')::uuid, (r->>'window_start')::timestamptz, (r->>'count')::int
            FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) r
            ON CONFLICT (project_id, window_start) DO UPDATE SET count = rate_limit_windows.count + EXCLUDED.count
            RETURNING project_id, window_start, count`
          const now = Date.now()
          for (const row of counted) {
            const group = groups.get(`${row.project_id}|${new Date(row.window_start).getTime()}`)
            if (!group) continue
            const resetSeconds = resetSecondsOf(group[0]!.windowStart, now)
            // The batch took positions count-n+1 .. count in this window, in arrival order; an item
            // counting for k requests takes k positions.
            let position = row.count - group.reduce((sum, item) => sum + item.count, 0)
            for (const item of group) {
              position += item.count
              yield* Deferred.succeed(item.counted, { end: position, resetSeconds })
            }
          }
        }).pipe(
          // Fail open: a counter outage must not take the API down with it.
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logWarning("rate limit counter unavailable; allowing requests", cause),
              Effect.forEach(batch, (item) => Deferred.succeed(item.counted, { end: item.count, resetSeconds: 60 }))
            )
          )
        )

      if (limit > 0) {
        yield* Queue.takeAll(queue).pipe(Effect.flatMap(countBatch), Effect.forever, Effect.forkScoped)
        // Old windows are useless after a minute; keep the table small.
        yield* sql`DELETE FROM rate_limit_windows WHERE window_start < now() - interval '5 minutes'`.pipe(
          Effect.ignore,
          Effect.repeat(Schedule.spaced(Duration.minutes(1))),
          Effect.forkScoped
        )
      }

      /** Adds `count` to the window's counter (group-committed); the window's count after it. */
      const add = (projectId: string, count: number, windowStart: number) =>
        Effect.gen(function*() {
          const counted = yield* Deferred.make<Counted>()
          yield* Queue.offer(queue, { projectId, count, windowStart, counted })
          return yield* Deferred.await(counted)
        })

      const exactly = (projectId: string, count: number): Effect.Effect<RateDecision> =>
        Effect.map(add(projectId, count, Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS), ({ end, resetSeconds }) => ({
          // Allowed if its last position is within the limit.
          allowed: end <= limit,
          limit,
          remaining: Math.max(0, limit - end),
          resetSeconds
        }))

      const block = blockOf(limit)
      const leases = new Map<string, Lease>()

      /**
       * Takes the next block of the window for this process, one at a time per project: the caller has
       * set `lease.taking` (without yielding in between, so no second taker starts) and this settles it.
       */
      const takeBlock = (projectId: string, lease: Lease, size: number, taking: Deferred.Deferred<void>) =>
        add(projectId, size, lease.windowStart).pipe(
          Effect.map(({ end }) => {
            // Only what the counter had left is ours; what went past the limit is nobody's.
            const granted = Math.max(0, Math.min(size, limit - (end - size)))
            lease.available += granted
            lease.counted = Math.max(lease.counted, end)
            if (granted < size) lease.exhausted = true
          }),
          Effect.ensuring(Effect.suspend(() => {
            lease.taking = undefined
            return Deferred.succeed(taking, undefined)
          }))
        )

      const startTaking = (lease: Lease) => {
        const taking = Deferred.makeUnsafe<void>()
        lease.taking = taking
        return taking
      }

      const decide = (lease: Lease, allowed: boolean): RateDecision => ({
        allowed,
        limit,
        remaining: lease.exhausted ? lease.available : Math.max(lease.available, limit - lease.counted + lease.available),
        resetSeconds: resetSecondsOf(lease.windowStart, Date.now())
      })

      const leased = (projectId: string, count: number): Effect.Effect<RateDecision> =>
        Effect.gen(function*() {
          const windowStart = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS
          let lease = leases.get(projectId)
          if (!lease || lease.windowStart !== windowStart) {
            if (leases.size > 100_000) leases.clear()
            lease = { windowStart, available: 0, counted: 0, exhausted: false, taking: undefined }
            leases.set(projectId, lease)
          }
          while (lease.available < count && !lease.exhausted) {
            if (lease.taking) yield* Deferred.await(lease.taking)
            else yield* takeBlock(projectId, lease, Math.max(block, count), startTaking(lease))
          }
          if (lease.available < count) return decide(lease, false)
          lease.available -= count
          // The next block is taken before this one runs out, so requests do not wait for it.
          if (lease.available < block / 2 && !lease.exhausted && !lease.taking) {
            yield* Effect.forkDetach(takeBlock(projectId, lease, block, startTaking(lease)))
          }
          return decide(lease, true)
        })

      const check = (projectId: string, count = 1): Effect.Effect<RateDecision> =>
        limit <= 0
          ? Effect.succeed({ allowed: true, limit: 0, remaining: 0, resetSeconds: 0 })
          : limit < LEASED_FROM
          ? exactly(projectId, count)
          : leased(projectId, count)

      return RateLimiter.of({ check })
    })
  )
}
