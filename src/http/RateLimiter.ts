/**
 * Requests per minute per project (or user), never more than the limit in any 60 s, across every api
 * process: each key's window is a ring of per-second counts in one Postgres row
 * (migrations/0023_sliding_rate_limits.sql), which a check updates in one statement that locks it, so the
 * processes' checks of a key are serialized. A request is counted once admitted (a refused one does not use up the window), and admitted
 * only while the requests of the last 60 s leave room (a second's requests count until the last of them is
 * 60 s old); so unlike fixed one-minute windows, a burst at the end of one minute and another at the start
 * of the next cannot both pass. Time is the service clock (CLOCK_OFFSET_MS). Concurrent checks are
 * group-committed: while one statement is in flight the next requests queue up and are decided together
 * by the following statement (one round trip per batch, not per request).
 *
 * - Limits under LEASED_FROM per minute are counted exactly: each request learns what remained after it,
 *   so `remaining` is exact and the last permit goes to whichever request comes first.
 * - Larger limits are leased: a process takes permits in blocks (0.5 % of the limit) and spends them in
 *   memory, taking the next block before the last runs out, so a request rarely waits for Postgres. A
 *   block is spent within LEASE_SECONDS of being taken (what is left then is dropped), and a leased
 *   window is that much longer, so the permits spent in any 60 s were all counted in one check's window.
 *   Near the limit a process may refuse while another still holds unspent permits (at most a block each),
 *   and `remaining` is this process's view.
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Queue, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"

export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Seconds until the window holds none of the requests counted so far (the whole limit is free again). */
  readonly resetSeconds: number
  /** Refused: seconds until this request would fit. */
  readonly retryAfterSeconds: number
}

const WINDOW_MS = 60_000
/** How long a leased block may be spent; a leased window is that much longer. */
export const LEASE_SECONDS = 5
/** Limits per minute from which permits are leased in blocks rather than counted one by one. */
export const LEASED_FROM = 10_000
/** A leased block: 0.5 % of the minute's budget. */
const blockOf = (limit: number) => Math.max(1, Math.floor(limit / 200))
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

/** One check waiting for the next statement: `count` permits for `key` (all or nothing, or as many as fit when leasing). */
interface Pending {
  readonly key: string
  readonly count: number
  readonly taken: Deferred.Deferred<Taken>
}

/** What the window gave one check. */
interface Taken {
  readonly granted: number
  /** Permits left in the window after this check. */
  readonly remaining: number
  /** Refused or cut: milliseconds until it would fit whole. */
  readonly retryMs: number
  readonly resetMs: number
}

/** Permits of one leased block not spent yet, spendable until `until` (service clock). */
interface Block {
  available: number
  readonly until: number
}

interface Lease {
  /** Oldest first; spent in that order, dropped once expired. */
  readonly blocks: Array<Block>
  /** The window's remaining permits when the last block was taken (for `remaining`). */
  remaining: number
  /** When the window will hold none of its requests (service clock). */
  resetAt: number
  /** The last take came back short: no block is taken again before this (service clock). */
  blockedUntil: number
  /** A block being taken; checks that find too few permits wait for it. */
  taking: Deferred.Deferred<void> | undefined
}

export class RateLimiter extends Context.Service<RateLimiter, {
  /** Counts `count` requests (default 1) against the key's window and says whether they fit. */
  readonly check: (key: string, count?: number) => Effect.Effect<RateDecision>
  /**
   * `check`'s decision when it needs no statement and no wait (leased permits at hand, a key known to
   * be full, no limit), counted as `check` counts it; undefined when only `check` can decide.
   */
  readonly checkNow: (key: string, count?: number) => RateDecision | undefined
}>()("app/http/RateLimiter") {
  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock
      const { rateLimitPerMinute: limit } = yield* AppConfig
      const leasing = limit >= LEASED_FROM
      const windowMs = WINDOW_MS + (leasing ? LEASE_SECONDS * 1000 : 0)
      const queue = yield* Queue.unbounded<Pending>()
      const runFork = Effect.runForkWith(yield* Effect.context<never>())

      const takeBatch = (batch: ReadonlyArray<Pending>) =>
        Effect.gen(function*() {
          const byKey = new Map<string, Array<Pending>>()
          for (const item of batch) {
            const group = byKey.get(item.key)
            if (group) group.push(item)
            else byKey.set(item.key, [item])
          }
          // In key order, so two processes' statements lock the rows they share in the same order.
          const keys = [...byKey.keys()].sort()
          const checks = keys.map((key) => ({ key, counts: byKey.get(key)!.map((item) => item.count) }))
          const now = clock.currentTimeMillisUnsafe()
          const rows = yield* sql<
            { key: string; granted: Array<number>; remaining: Array<number>; retry_ms: Array<number>; reset_ms: number }
          >`
            INSERT INTO rate_limit_rings AS r (key, state)
            SELECT c.key, ms_rate_limit_step(NULL, ${now}::bigint, ${windowMs}::integer, ${limit}::integer, c.counts, ${leasing})
            FROM jsonb_to_recordset(${JSON.stringify(checks)}::jsonb) AS c(key uuid, counts integer[])
            ON CONFLICT (key) DO UPDATE
              SET state = ms_rate_limit_step(r.state, ${now}::bigint, ${windowMs}::integer, ${limit}::integer, (EXCLUDED.state).checks, ${leasing})
            RETURNING key, (state).granted, (state).remaining, (state).retry_ms, (state).reset_ms`
          for (const row of rows) {
            const group = byKey.get(row.key) ?? []
            for (const [index, item] of group.entries()) {
              yield* Deferred.succeed(item.taken, {
                granted: row.granted[index]!,
                remaining: row.remaining[index]!,
                retryMs: row.retry_ms[index]!,
                resetMs: row.reset_ms
              })
            }
          }
        }).pipe(
          // Fail open: a counter outage must not take the API down with it.
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logWarning("rate limit counter unavailable; allowing requests", cause),
              Effect.forEach(
                batch,
                (item) => Deferred.succeed(item.taken, { granted: item.count, remaining: limit, retryMs: 0, resetMs: 0 })
              )
            )
          )
        )

      if (limit > 0) {
        yield* Queue.takeAll(queue).pipe(Effect.flatMap(takeBatch), Effect.forever, Effect.forkScoped)
        // A key idle for an hour has an empty window; keep the table small.
        yield* Effect.suspend(() =>
          sql`DELETE FROM rate_limit_rings WHERE (state).head < ${clock.currentTimeMillisUnsafe() - 3_600_000}::bigint`
        ).pipe(
          Effect.ignore,
          Effect.repeat(Schedule.spaced(Duration.minutes(1))),
          Effect.forkScoped
        )
      }

      /** Asks the key's window for `count` permits (group-committed). */
      const take = (key: string, count: number) =>
        Effect.gen(function*() {
          const taken = yield* Deferred.make<Taken>()
          yield* Queue.offer(queue, { key, count, taken })
          return yield* Deferred.await(taken)
        })

      /**
       * Keys whose window has no room at all until `until` (service clock): learnt from a single request
       * refused, so further requests before then are refused here, without a round trip. Exact still:
       * room only comes back as admitted requests leave the window, and other processes only take it.
       */
      const full = new Map<string, { readonly until: number; readonly resetAt: number }>()

      /** A key known to be full: refused without a round trip. */
      const knownFull = (key: string, now: number): RateDecision | undefined => {
        const known = full.get(key)
        if (known === undefined || now >= known.until) return undefined
        return {
          allowed: false,
          limit,
          remaining: 0,
          resetSeconds: seconds(known.resetAt - now),
          retryAfterSeconds: seconds(known.until - now)
        }
      }

      const exactly = (key: string, count: number): Effect.Effect<RateDecision> =>
        Effect.suspend(() => {
          const now = clock.currentTimeMillisUnsafe()
          const refused = knownFull(key, now)
          if (refused) return Effect.succeed(refused)
          full.delete(key)
          return Effect.map(take(key, count), (taken) => {
            const allowed = taken.granted === count
            if (!allowed && count === 1) {
              if (full.size > 100_000) full.clear()
              full.set(key, { until: now + taken.retryMs, resetAt: now + taken.resetMs })
            }
            return {
              allowed,
              limit,
              remaining: taken.remaining,
              resetSeconds: seconds(taken.resetMs),
              retryAfterSeconds: seconds(taken.retryMs)
            }
          })
        })

      const block = blockOf(limit)
      const leases = new Map<string, Lease>()

      const available = (lease: Lease, now: number) => {
        while (lease.blocks.length > 0 && lease.blocks[0]!.until <= now) lease.blocks.shift()
        return lease.blocks.reduce((sum, each) => sum + each.available, 0)
      }

      const spend = (lease: Lease, count: number) => {
        for (const each of lease.blocks) {
          const spent = Math.min(each.available, count)
          each.available -= spent
          count -= spent
        }
        while (lease.blocks.length > 0 && lease.blocks[0]!.available === 0) lease.blocks.shift()
      }

      /**
       * Takes the next block for this process, one at a time per key: the caller has set `lease.taking`
       * (without yielding in between, so no second taker starts) and this settles it.
       */
      const takeBlock = (key: string, lease: Lease, size: number, taking: Deferred.Deferred<void>) =>
        Effect.suspend(() => {
          // Spendable for LEASE_SECONDS from before the window counted it.
          const until = clock.currentTimeMillisUnsafe() + LEASE_SECONDS * 1000
          return take(key, size).pipe(
            Effect.map((taken) => {
              const now = clock.currentTimeMillisUnsafe()
              if (taken.granted > 0) lease.blocks.push({ available: taken.granted, until })
              lease.remaining = taken.remaining
              lease.resetAt = now + taken.resetMs
              if (taken.granted < size) lease.blockedUntil = now + taken.retryMs
            })
          )
        }).pipe(
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

      const decide = (lease: Lease, allowed: boolean, now: number): RateDecision => ({
        allowed,
        limit,
        remaining: lease.remaining + available(lease, now),
        resetSeconds: seconds(lease.resetAt - now),
        retryAfterSeconds: seconds(lease.blockedUntil - now)
      })

      const leased = (key: string, count: number): Effect.Effect<RateDecision> =>
        Effect.gen(function*() {
          let lease = leases.get(key)
          if (!lease) {
            if (leases.size > 100_000) leases.clear()
            lease = { blocks: [], remaining: limit, resetAt: 0, blockedUntil: 0, taking: undefined }
            leases.set(key, lease)
          }
          while (available(lease, clock.currentTimeMillisUnsafe()) < count) {
            if (lease.taking) yield* Deferred.await(lease.taking)
            else if (clock.currentTimeMillisUnsafe() < lease.blockedUntil) break
            else yield* takeBlock(key, lease, Math.max(block, count), startTaking(lease))
          }
          const now = clock.currentTimeMillisUnsafe()
          if (available(lease, now) < count) return decide(lease, false, now)
          return spendFrom(key, lease, count, now)
        })

      /** Spends `count` permits the lease holds (the caller made sure it does). */
      const spendFrom = (key: string, lease: Lease, count: number, now: number) => {
        spend(lease, count)
        // The next block is taken before this one runs out, so requests do not wait for it.
        if (available(lease, now) < block / 2 && now >= lease.blockedUntil && !lease.taking) {
          runFork(takeBlock(key, lease, block, startTaking(lease)))
        }
        return decide(lease, true, now)
      }

      const unlimited: RateDecision = { allowed: true, limit: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 }

      const check = (key: string, count = 1): Effect.Effect<RateDecision> =>
        limit <= 0
          ? Effect.succeed(unlimited)
          : leasing
          ? leased(key, count)
          : exactly(key, count)

      const checkNow = (key: string, count = 1): RateDecision | undefined => {
        if (limit <= 0) return unlimited
        const now = clock.currentTimeMillisUnsafe()
        if (!leasing) return knownFull(key, now)
        const lease = leases.get(key)
        return lease !== undefined && available(lease, now) >= count ? spendFrom(key, lease, count, now) : undefined
      }

      return RateLimiter.of({ check, checkNow })
    })
  )
}
