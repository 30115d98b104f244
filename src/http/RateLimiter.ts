/**
 * Requests per minute per project, exact across every api process: the counters are fixed one-minute
 * windows in Postgres. Concurrent checks are group-committed: while one statement is in flight the next
 * requests queue up and are counted together by the following statement (one round trip per batch,
 * not per request), and each request learns its exact position in the window.
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
  /** Requests this check counts for (a batch of events counts one per event). */
  readonly count: number
  readonly windowStart: number
  readonly decision: Deferred.Deferred<RateDecision>
}

const WINDOW_MS = 60_000

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
            const resetSeconds = Math.max(1, Math.ceil((group[0]!.windowStart + WINDOW_MS - now) / 1000))
            // The batch took positions count-n+1 .. count in this window, in arrival order; an item
            // counting for k requests takes k positions and is allowed if its last one is.
            let position = row.count - group.reduce((sum, item) => sum + item.count, 0)
            for (const item of group) {
              position += item.count
              yield* Deferred.succeed(item.decision, {
                allowed: position <= limit,
                limit,
                remaining: Math.max(0, limit - position),
                resetSeconds
              })
            }
          }
        }).pipe(
          // Fail open: a counter outage must not take the API down with it.
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logWarning("rate limit counter unavailable; allowing requests", cause),
              Effect.forEach(batch, (item) =>
                Deferred.succeed(item.decision, { allowed: true, limit, remaining: limit, resetSeconds: 60 }))
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

      const check = (projectId: string, count = 1): Effect.Effect<RateDecision> =>
        limit <= 0
          ? Effect.succeed({ allowed: true, limit: 0, remaining: 0, resetSeconds: 0 })
          : Effect.gen(function*() {
            const decision = yield* Deferred.make<RateDecision>()
            const windowStart = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS
            yield* Queue.offer(queue, { projectId, count, windowStart, decision })
            return yield* Deferred.await(decision)
          })

      return RateLimiter.of({ check })
    })
  )
}
