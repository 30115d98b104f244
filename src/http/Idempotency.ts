/**
 * `Idempotency-Key` for /v1/send and /v1/track: scoped to the project, remembered for
 * IDEMPOTENCY_TTL_HOURS.
 *
 * - The key is claimed with one INSERT before the work runs, so of concurrent duplicates exactly one
 *   proceeds. The claim is a lease (IDEMPOTENCY_LEASE_SECONDS), renewed every third of it while the
 *   request runs; a duplicate meanwhile gets 409 IDEMPOTENCY_KEY_REUSED with `inProgress: true`.
 * - A claim whose process died is not renewed: once its lease runs out, a retry takes it over and
 *   performs the request. Each attempt holds its own claim token, and only the holder can complete or
 *   release the key, so an attempt that outlived its lease cannot overwrite its successor.
 * - A successful request stores its response with the key; /v1/send stores it in the transaction that
 *   queues its mail (`Claim.complete`), so the mail and the key's completion commit together and a
 *   takeover can never send twice. /v1/track completes after its PubAck; its event id is the claim's
 *   `operationId`, the same for every attempt at one key, so an attempt repeated after a crash between
 *   the PubAck and the completion is dropped by the actor as the event it already stored.
 * - A repeat after completion gets 409 IDEMPOTENCY_KEY_REUSED (the spec), whose details now carry the
 *   original response (`originalResponse`), so a client that lost the first answer still learns it.
 * - A request that fails (4xx or 5xx) or is interrupted releases its key at once so the client can
 *   retry with it; the retry keeps the operation id.
 */
import { Context, Duration, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { BadRequest, Conflict } from "./api/statusErrors.ts"

const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/

/** The request's hold on its key. */
export interface Claim {
  /** The same for every attempt at one key (a fresh id without a key): ids derived from it repeat with the request. */
  readonly operationId: string
  /** A key holds the operation: it may be attempted again (false: this attempt is the only one). */
  readonly repeatable: boolean
  /**
   * Stores the response as the key's outcome; call it inside the transaction that does the work, so
   * both commit or neither. Fails (so the transaction rolls back) if another attempt took the key over.
   */
  readonly complete: (response: unknown) => Effect.Effect<void, Conflict>
}

interface Original {
  readonly request: string
  readonly created_at: Date
  readonly status_code: number | null
  readonly response: unknown
  readonly in_progress: boolean
  readonly lease_left_ms: number | null
}

export class Idempotency extends Context.Service<Idempotency, {
  /**
   * Runs `work` once per key: `key` undefined runs it unconditionally. `request` describes the
   * original request in the 409 details (`POST /v1/track`).
   */
  readonly once: <A, E, R>(
    projectId: string,
    key: string | undefined,
    request: string,
    work: (claim: Claim) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | BadRequest | Conflict, R>
}>()("app/http/Idempotency") {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { idempotencyTtlHours, idempotencyLeaseSeconds } = yield* AppConfig
      const ttlSeconds = Math.round(idempotencyTtlHours * 3600)
      const renewEvery = Duration.millis(Math.max(100, (idempotencyLeaseSeconds * 1000) / 3))

      const reused = (key: string, request: string, original: Original | undefined) => {
        const details = {
          key,
          originalRequest: original?.request ?? request,
          originalRequestAt: original ? new Date(original.created_at).toISOString() : null,
          originalStatusCode: original?.status_code ?? null,
          inProgress: original?.in_progress ?? false
        }
        if (original?.in_progress) {
          const retryAfter = Math.max(1, Math.ceil((original.lease_left_ms ?? 0) / 1000))
          return new Conflict({
            code: "IDEMPOTENCY_KEY_REUSED",
            message: "A request with this Idempotency-Key is still in progress",
            details: { ...details, retryAfterSeconds: retryAfter },
            suggestion: "Retry later with the same key: you get its outcome once it finishes, or it is performed if its process stopped.",
            headers: { "retry-after": String(retryAfter) }
          })
        }
        return Conflict.of("IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was already used by this project", {
          ...details,
          ...(original?.response != null ? { originalResponse: original.response } : {})
        })
      }

      /**
       * One statement: a new key is inserted; an expired one starts over as a new use; a claim left
       * in progress past its lease is taken over as the same use (its operation id kept); a live
       * claim or a completed key is left alone.
       */
      const tryClaim = (projectId: string, key: string, request: string, token: string) =>
        sql<{ operation_id: string }>`
          INSERT INTO idempotency_keys (project_id, key, request, expires_at, operation_id, claim_token, locked_until)
          VALUES (${projectId}, ${key}, ${request}, now() + make_interval(secs => ${ttlSeconds}), ${uuidv7()}, ${token},
                  now() + make_interval(secs => ${idempotencyLeaseSeconds}))
          ON CONFLICT (project_id, key) DO UPDATE SET
            request = EXCLUDED.request,
            created_at = CASE WHEN idempotency_keys.expires_at <= now() THEN now() ELSE idempotency_keys.created_at END,
            expires_at = CASE WHEN idempotency_keys.expires_at <= now() THEN EXCLUDED.expires_at ELSE idempotency_keys.expires_at END,
            operation_id = CASE WHEN idempotency_keys.expires_at <= now() THEN EXCLUDED.operation_id
                                ELSE COALESCE(idempotency_keys.operation_id, EXCLUDED.operation_id) END,
            claim_token = EXCLUDED.claim_token, locked_until = EXCLUDED.locked_until, status_code = NULL, response = NULL
            WHERE idempotency_keys.expires_at <= now()
               OR (idempotency_keys.status_code IS NULL AND idempotency_keys.locked_until <= now())
          RETURNING operation_id`

      const claim = Effect.fnUntraced(function*(projectId: string, key: string, request: string, token: string) {
        // A key released between the refused INSERT and the look-up is free again: try once more.
        for (let attempt = 0; attempt < 3; attempt++) {
          const [claimed] = yield* tryClaim(projectId, key, request, token)
          if (claimed) return claimed.operation_id
          const [original] = yield* sql<Original>`
            SELECT request, created_at, status_code, response, status_code IS NULL AS in_progress,
                   (extract(epoch FROM locked_until - now()) * 1000)::float8 AS lease_left_ms
            FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key}`
          if (original) return yield* reused(key, request, original)
        }
        return yield* reused(key, request, undefined)
      })

      const ours = (projectId: string, key: string, token: string) =>
        sql`project_id = ${projectId} AND key = ${key} AND claim_token = ${token} AND status_code IS NULL`

      const once = <A, E, R>(
        projectId: string,
        key: string | undefined,
        request: string,
        work: (claim: Claim) => Effect.Effect<A, E, R>
      ) => {
        if (key === undefined) return work({ operationId: uuidv7(), repeatable: false, complete: () => Effect.void })
        if (!PRINTABLE_ASCII.test(key)) {
          // 400, as the reference documents an invalid Idempotency-Key (a header, not a body field).
          return Effect.fail(BadRequest.of("Idempotency-Key must be 1 to 255 printable ASCII characters", "INVALID_IDEMPOTENCY_KEY"))
        }
        return Effect.gen(function*() {
          const token = uuidv7()
          const operationId = yield* claim(projectId, key, request, token).pipe(Effect.catchTag("SqlError", Effect.die))
          let completed = false
          const complete = (response: unknown) =>
            sql`UPDATE idempotency_keys SET status_code = 200, response = ${JSON.stringify(response)}::jsonb, locked_until = NULL
                WHERE ${ours(projectId, key, token)} RETURNING key`.pipe(
              Effect.catchTag("SqlError", Effect.die),
              Effect.flatMap((rows) => {
                if (rows.length > 0) {
                  completed = true
                  return Effect.void
                }
                // Our lease ran out and a retry took the key over: this attempt must not commit.
                return Effect.fail(
                  Conflict.of("IDEMPOTENCY_KEY_REUSED", "A retry with this Idempotency-Key took it over", { key, inProgress: true })
                )
              })
            )
          const renew = sql`UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => ${idempotencyLeaseSeconds})
                            WHERE ${ours(projectId, key, token)}`
          const heartbeat = Effect.forever(Effect.sleep(renewEvery).pipe(Effect.andThen(renew), Effect.ignore))
          return yield* Effect.raceFirst(work({ operationId, repeatable: true, complete }), heartbeat).pipe(
            Effect.onExit((exit) => {
              if (Exit.isSuccess(exit)) return completed ? Effect.void : complete(exit.value).pipe(Effect.ignore)
              // Released by ending the lease now, not by deleting the key: a failure can follow a
              // publish that went through (a PubAck timed out, the client went away), so the retry
              // keeps the operation id and repeats that event rather than adding another.
              return sql`UPDATE idempotency_keys SET locked_until = now() WHERE ${ours(projectId, key, token)}`.pipe(Effect.ignore)
            })
          )
        })
      }

      return Idempotency.of({ once })
    })
  )
}
