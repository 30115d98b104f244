/**
 * The queue of the platform's own mail (migration 0021): messages ready to send, and password reset
 * requests the sender resolves itself. Rows are claimed with a lease (`next_attempt_at` moved ahead),
 * so several api processes share the queue and a process that died mid-send leaves its rows to the others.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface PlatformMessage {
  readonly to: string
  readonly subject: string
  /** Plain text; the link is on a line of its own. */
  readonly text: string
}

export type QueuedMail =
  | { readonly id: string; readonly kind: "message"; readonly message: PlatformMessage; readonly attempts: number }
  | { readonly id: string; readonly kind: "password_reset"; readonly email: string; readonly attempts: number }

type Row = {
  id: string
  kind: "message" | "password_reset"
  recipient: string
  subject: string | null
  body: string | null
  attempts: number
}

const toQueued = (row: Row): QueuedMail =>
  row.kind === "message"
    ? {
      id: row.id,
      kind: "message",
      message: { to: row.recipient, subject: row.subject ?? "", text: row.body ?? "" },
      attempts: row.attempts
    }
    : { id: row.id, kind: "password_reset", email: row.recipient, attempts: row.attempts }

export class PlatformMailQueue extends Context.Service<PlatformMailQueue, {
  readonly enqueueMessage: (message: PlatformMessage) => Effect.Effect<void, PersistenceError>
  /** A reset request for `email` as typed (with or without an account: the sender finds out). */
  readonly enqueuePasswordReset: (email: string) => Effect.Effect<void, PersistenceError>
  /** Up to `limit` rows due now, each leased for `leaseSeconds` and counted as an attempt. */
  readonly claimDue: (limit: number, leaseSeconds: number) => Effect.Effect<ReadonlyArray<QueuedMail>, PersistenceError>
  /** Sent, or nothing to send: the row goes. */
  readonly remove: (id: string) => Effect.Effect<void, PersistenceError>
  /**
   * Tries again in `delaySeconds`; `message` replaces a reset request the sender resolved, so the retry
   * sends the same link rather than issuing another.
   */
  readonly retryLater: (id: string, delaySeconds: number, error: string, message?: PlatformMessage) => Effect.Effect<void, PersistenceError>
  /** Milliseconds until the next row is due (≤ 0: now), or undefined when the queue is empty. */
  readonly nextDueIn: Effect.Effect<number | undefined, PersistenceError>
}>()("app/store/PlatformMailQueue") {
  static readonly layer = Layer.effect(
    PlatformMailQueue,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return PlatformMailQueue.of({
        enqueueMessage: (message) =>
          sql`INSERT INTO platform_mail (id, kind, recipient, subject, body)
              VALUES (${uuidv7()}, 'message', ${message.to}, ${message.subject}, ${message.text})`.pipe(Effect.asVoid, mapSqlError),
        enqueuePasswordReset: (email) =>
          sql`INSERT INTO platform_mail (id, kind, recipient) VALUES (${uuidv7()}, 'password_reset', ${email})`.pipe(
            Effect.asVoid,
            mapSqlError
          ),
        claimDue: (limit, leaseSeconds) =>
          sql<Row>`
            UPDATE platform_mail SET next_attempt_at = now() + make_interval(secs => ${leaseSeconds}), attempts = attempts + 1
            WHERE id IN (
              SELECT id FROM platform_mail WHERE next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT ${limit}
              FOR UPDATE SKIP LOCKED)
            RETURNING id, kind, recipient, subject, body, attempts`.pipe(
            Effect.map((rows) => [...rows].sort((a, b) => (a.id < b.id ? -1 : 1)).map(toQueued)),
            mapSqlError
          ),
        remove: (id) => sql`DELETE FROM platform_mail WHERE id = ${id}`.pipe(Effect.asVoid, mapSqlError),
        retryLater: (id, delaySeconds, error, message) =>
          (message
            ? sql`UPDATE platform_mail SET kind = 'message', recipient = ${message.to}, subject = ${message.subject}, body = ${message.text},
                    next_attempt_at = now() + make_interval(secs => ${delaySeconds}), last_error = ${error}
                  WHERE id = ${id}`
            : sql`UPDATE platform_mail SET next_attempt_at = now() + make_interval(secs => ${delaySeconds}), last_error = ${error}
                  WHERE id = ${id}`).pipe(Effect.asVoid, mapSqlError),
        nextDueIn: sql<{ ms: number | null }>`
          SELECT (extract(epoch FROM min(next_attempt_at) - now()) * 1000)::float8 AS ms FROM platform_mail`.pipe(
          Effect.map((rows) => rows[0]?.ms ?? undefined),
          mapSqlError
        )
      })
    })
  )
}
