/**
 * Single-use tokens mailed to people: email verification, password reset and project invitations.
 * Only SHA-256 hashes are stored; a token is consumed atomically (used once, before its expiry).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import type { Role } from "../domain/permissions.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export type TokenPurpose = "verify_email" | "reset_password" | "invitation"

export interface TokenGrant {
  readonly userId: string | null
  readonly email: string
  readonly projectId: string | null
  readonly role: Role | null
}

export interface PendingInvitation {
  readonly email: string
  readonly role: Role
  readonly createdAt: Date
  readonly expiresAt: Date
}

const hashToken = (token: string) => createHash("sha256").update(token).digest()

/** At most one verification or reset mail a minute per address: the endpoints cannot be used to flood an inbox. */
export const MAIL_COOLDOWN_SECONDS = 60

/** How long each kind of token stays usable. */
export const TOKEN_TTL_HOURS: Record<TokenPurpose, number> = { verify_email: 48, reset_password: 1, invitation: 168 }

export class AccountTokens extends Context.Service<AccountTokens, {
  /** A new token for `grant`; the raw value goes into the mailed link and is never stored. */
  readonly issue: (purpose: TokenPurpose, grant: TokenGrant) => Effect.Effect<string, PersistenceError>
  /** What the token grants, marking it used; undefined when unknown, expired or already used. */
  readonly consume: (purpose: TokenPurpose, token: string) => Effect.Effect<TokenGrant | undefined, PersistenceError>
  /** What the token grants without using it (an invitation shown before sign-up). */
  readonly peek: (purpose: TokenPurpose, token: string) => Effect.Effect<TokenGrant | undefined, PersistenceError>
  /** Seconds until another token of `purpose` may be mailed to `email` (one a minute), or undefined. */
  readonly cooldown: (purpose: TokenPurpose, email: string) => Effect.Effect<number | undefined, PersistenceError>
  readonly pendingInvitations: (projectId: string) => Effect.Effect<ReadonlyArray<PendingInvitation>, PersistenceError>
  /** Withdraws a project's pending invitations of one email. */
  readonly withdrawInvitations: (projectId: string, email: string) => Effect.Effect<number, PersistenceError>
}>()("app/store/AccountTokens") {
  static readonly layer = Layer.effect(
    AccountTokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      type Row = { user_id: string | null; email: string; project_id: string | null; role: Role | null }
      const toGrant = (row: Row | undefined): TokenGrant | undefined =>
        row && { userId: row.user_id, email: row.email, projectId: row.project_id, role: row.role }

      return AccountTokens.of({
        issue: (purpose, grant) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const token = randomBytes(32).toString("base64url")
            const expiresAt = new Date(now + TOKEN_TTL_HOURS[purpose] * 3_600_000)
            return sql`INSERT INTO account_tokens (hash, purpose, user_id, email, project_id, role, expires_at)
                       VALUES (${hashToken(token)}, ${purpose}, ${grant.userId}, ${grant.email}, ${grant.projectId}, ${grant.role},
                               ${expiresAt})`.pipe(Effect.as(token), mapSqlError)
          }),
        consume: (purpose, token) =>
          sql<Row>`UPDATE account_tokens SET used_at = now()
                   WHERE hash = ${hashToken(token)} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()
                   RETURNING user_id, email, project_id, role`.pipe(Effect.map((rows) => toGrant(rows[0])), mapSqlError),
        peek: (purpose, token) =>
          sql<Row>`SELECT user_id, email, project_id, role FROM account_tokens
                   WHERE hash = ${hashToken(token)} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()`.pipe(
            Effect.map((rows) => toGrant(rows[0])),
            mapSqlError
          ),
        cooldown: (purpose, email) =>
          sql<{ wait: number }>`
            SELECT extract(epoch FROM max(created_at) + make_interval(secs => ${MAIL_COOLDOWN_SECONDS}) - now())::float8 AS wait
            FROM account_tokens WHERE purpose = ${purpose} AND email = ${email}
            HAVING max(created_at) > now() - make_interval(secs => ${MAIL_COOLDOWN_SECONDS})`.pipe(
            Effect.map((rows) => rows[0] && Math.max(1, Math.ceil(rows[0].wait))),
            mapSqlError
          ),
        pendingInvitations: (projectId) =>
          sql<{ email: string; role: Role; created_at: Date; expires_at: Date }>`
            SELECT email, role, created_at, expires_at FROM account_tokens
            WHERE project_id = ${projectId} AND purpose = 'invitation' AND used_at IS NULL AND expires_at > now()
            ORDER BY created_at`.pipe(
            Effect.map((rows) => rows.map((row) => ({ email: row.email, role: row.role, createdAt: row.created_at, expiresAt: row.expires_at }))),
            mapSqlError
          ),
        withdrawInvitations: (projectId, email) =>
          sql`UPDATE account_tokens SET used_at = now()
              WHERE project_id = ${projectId} AND purpose = 'invitation' AND email = ${email} AND used_at IS NULL
              RETURNING hash`.pipe(Effect.map((rows) => rows.length), mapSqlError)
      })
    })
  )
}
