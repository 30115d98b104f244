/**
 * `Idempotency-Key` for /v1/send and /v1/track: scoped to the project, expiring after
 * IDEMPOTENCY_TTL_HOURS. The key is claimed with an INSERT before the work runs, so of concurrent
 * duplicates exactly one proceeds; the others (and later repeats) get 409 IDEMPOTENCY_KEY_REUSED.
 * A request that fails (4xx or 5xx) releases its key so the client can retry with it.
 */
import { Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { ApiError } from "./errors.ts"

const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/

export class Idempotency extends Context.Service<Idempotency, {
  /**
   * Runs `effect` once per key: `key` undefined runs it unconditionally. `request` describes the
   * original request in the 409 details (`POST /v1/track`).
   */
  readonly once: <A, E, R>(
    projectId: string,
    key: string | undefined,
    request: string,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | ApiError, R>
}>()("app/http/Idempotency") {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { idempotencyTtlHours } = yield* AppConfig
      const ttlSeconds = Math.round(idempotencyTtlHours * 3600)

      const claim = (projectId: string, key: string, request: string) =>
        Effect.gen(function*() {
          // One statement: a new key is inserted, an expired one is taken over, a live one is left alone.
          const claimed = yield* sql`
            INSERT INTO idempotency_keys (project_id, key, request, expires_at)
            VALUES (${projectId}, ${key}, ${request}, now() + make_interval(secs => ${ttlSeconds}))
            ON CONFLICT (project_id, key) DO UPDATE SET
              request = EXCLUDED.request, created_at = now(), expires_at = EXCLUDED.expires_at, status_code = NULL
              WHERE idempotency_keys.expires_at <= now()
            RETURNING key`
          if (claimed.length > 0) return
          const [original] = yield* sql<{ request: string; created_at: Date; status_code: number | null }>`
            SELECT request, created_at, status_code FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key}`
          return yield* ApiError.conflict("IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was already used by this project", {
            key,
            originalRequest: original?.request ?? request,
            originalRequestAt: original ? new Date(original.created_at).toISOString() : null,
            originalStatusCode: original?.status_code ?? null
          })
        })

      const once = <A, E, R>(projectId: string, key: string | undefined, request: string, effect: Effect.Effect<A, E, R>) => {
        if (key === undefined) return effect
        if (!PRINTABLE_ASCII.test(key)) {
          return Effect.fail(ApiError.invalidField(
            "Idempotency-Key",
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
            "invalid_string"
          ))
        }
        return Effect.gen(function*() {
          yield* claim(projectId, key, request).pipe(Effect.catchTag("SqlError", Effect.die))
          return yield* effect.pipe(
            Effect.onExit((exit) =>
              (Exit.isSuccess(exit)
                ? sql`UPDATE idempotency_keys SET status_code = 200 WHERE project_id = ${projectId} AND key = ${key}`
                : sql`DELETE FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key}`
              ).pipe(Effect.ignore)
            )
          )
        })
      }

      return Idempotency.of({ once })
    })
  )
}
