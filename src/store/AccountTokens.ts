/**
 * Single-use tokens mailed to people: email verification, password reset and project invitations.
 * Only SHA-256 hashes are stored; a token is consumed atomically (used once, before its expiry).
 * An invitation keeps its id while a resend replaces its token, so the dashboard can name it.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import { uuidv7 } from "../domain/ids.ts"
import { type Role, Roles } from "../domain/permissions.ts"
import { decodeRows, IdRow } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export type TokenPurpose = "verify_email" | "reset_password" | "invitation"

export interface TokenGrant {
  readonly userId: string | null
  readonly email: string
  readonly projectId: string | null
  readonly role: Role | null
}

export interface PendingInvitation {
  readonly id: string
  readonly email: string
  readonly role: Role
  readonly createdAt: Date
  readonly expiresAt: Date
}

/** An invitation with the raw token of its link (which exists only in this answer and in the mail). */
export interface IssuedInvitation {
  readonly invitation: PendingInvitation
  readonly token: string
}

const hashToken = (token: string) => createHash("sha256").update(token).digest()
const newToken = () => randomBytes(32).toString("base64url")

/** At most one verification or reset mail a minute per address: the endpoints cannot be used to flood an inbox. */
export const MAIL_COOLDOWN_SECONDS = 60

/** How long each kind of token stays usable. */
export const TOKEN_TTL_HOURS: Record<TokenPurpose, number> = { verify_email: 48, reset_password: 1, invitation: 168 }

/** A pending invitation's row; PendingInvitation keeps the driver's Dates (its readers format them). */
const InvitationRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  role: Schema.Literals(Roles),
  created_at: Schema.Date,
  expires_at: Schema.Date
})
const invitationRows = decodeRows(InvitationRow)

/** What a token grants, as consume and peek return it. */
const GrantRow = Schema.Struct({
  user_id: Schema.NullOr(Schema.String),
  email: Schema.String,
  project_id: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Schema.Literals(Roles))
})
const grantRows = decodeRows(GrantRow)

const CreatedRow = Schema.Struct({ created_at: Schema.Date })
const WaitRow = Schema.Struct({ wait: Schema.Number })
/** Statements that only say how many rows they touched (`RETURNING id`). */
const touched = decodeRows(IdRow)

const toInvitation = (row: typeof InvitationRow.Type): PendingInvitation => ({
  id: row.id,
  email: row.email,
  role: row.role,
  createdAt: row.created_at,
  expiresAt: row.expires_at
})

export class AccountTokens extends Context.Service<AccountTokens, {
  /** A new token for `grant`; the raw value goes into the mailed link and is never stored. */
  readonly issue: (purpose: TokenPurpose, grant: TokenGrant) => Effect.Effect<string, PersistenceError>
  /** What the token grants, marking it used; undefined when unknown, expired or already used. */
  readonly consume: (purpose: TokenPurpose, token: string) => Effect.Effect<TokenGrant | undefined, PersistenceError>
  /** What the token grants without using it (an invitation shown before sign-up). */
  readonly peek: (purpose: TokenPurpose, token: string) => Effect.Effect<TokenGrant | undefined, PersistenceError>
  /** Seconds until another token of `purpose` may be mailed to `email` (one a minute), or undefined. */
  readonly cooldown: (purpose: TokenPurpose, email: string) => Effect.Effect<number | undefined, PersistenceError>
  /** Spends every outstanding token of the user for these purposes (their links stop working at once). */
  readonly spendAll: (userId: string, purposes: ReadonlyArray<TokenPurpose>) => Effect.Effect<number, PersistenceError>
  readonly pendingInvitations: (projectId: string) => Effect.Effect<ReadonlyArray<PendingInvitation>, PersistenceError>
  readonly pendingInvitation: (projectId: string, id: string) => Effect.Effect<PendingInvitation | undefined, PersistenceError>
  /** A new invitation of `email` to the project, replacing any pending one of that email there. */
  readonly invite: (projectId: string, email: string, role: Role) => Effect.Effect<IssuedInvitation, PersistenceError>
  /** A new token (and expiry) for a pending invitation; the old link stops working. Undefined when not pending. */
  readonly reissueInvitation: (projectId: string, id: string) => Effect.Effect<IssuedInvitation | undefined, PersistenceError>
  /** Withdraws a pending invitation (its link stops working at once); false when none was pending. */
  readonly withdrawInvitation: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
}>()("app/store/AccountTokens") {
  static readonly layer = Layer.effect(
    AccountTokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const toGrant = (row: typeof GrantRow.Type | undefined): TokenGrant | undefined =>
        row && { userId: row.user_id, email: row.email, projectId: row.project_id, role: row.role }
      const expiryOf = (purpose: TokenPurpose) =>
        Effect.map(Clock.currentTimeMillis, (now) => new Date(now + TOKEN_TTL_HOURS[purpose] * 3_600_000))

      const issue = (purpose: TokenPurpose, grant: TokenGrant, id = uuidv7()) =>
        Effect.flatMap(expiryOf(purpose), (expiresAt) => {
          const token = newToken()
          return decodeRows(CreatedRow)(sql`
            INSERT INTO account_tokens (id, hash, purpose, user_id, email, project_id, role, expires_at)
            VALUES (${id}, ${hashToken(token)}, ${purpose}, ${grant.userId}, ${grant.email}, ${grant.projectId}, ${grant.role},
                    ${expiresAt})
            RETURNING created_at`).pipe(Effect.map(([row]) => ({ token, createdAt: row!.created_at, expiresAt })))
        })

      const withdrawInvitations = (projectId: string, email: string) =>
        touched(sql`UPDATE account_tokens SET used_at = now()
            WHERE project_id = ${projectId} AND purpose = 'invitation' AND email = ${email} AND used_at IS NULL
            RETURNING id`).pipe(Effect.map((rows) => rows.length))

      const pendingInvitation = (projectId: string, id: string) =>
        invitationRows(sql`
          SELECT id, email, role, created_at, expires_at FROM account_tokens
          WHERE id = ${id} AND project_id = ${projectId} AND purpose = 'invitation' AND used_at IS NULL AND expires_at > now()`).pipe(
          Effect.map(([row]) => row && toInvitation(row)),
          mapSqlError
        )

      return AccountTokens.of({
        issue: (purpose, grant) => issue(purpose, grant).pipe(Effect.map(({ token }) => token), mapSqlError),
        consume: (purpose, token) =>
          grantRows(sql`UPDATE account_tokens SET used_at = now()
                   WHERE hash = ${hashToken(token)} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()
                   RETURNING user_id, email, project_id, role`).pipe(Effect.map((rows) => toGrant(rows[0])), mapSqlError),
        peek: (purpose, token) =>
          grantRows(sql`SELECT user_id, email, project_id, role FROM account_tokens
                   WHERE hash = ${hashToken(token)} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()`).pipe(
            Effect.map((rows) => toGrant(rows[0])),
            mapSqlError
          ),
        cooldown: (purpose, email) =>
          decodeRows(WaitRow)(sql`
            SELECT extract(epoch FROM max(created_at) + make_interval(secs => ${MAIL_COOLDOWN_SECONDS}) - now())::float8 AS wait
            FROM account_tokens WHERE purpose = ${purpose} AND email = ${email}
            HAVING max(created_at) > now() - make_interval(secs => ${MAIL_COOLDOWN_SECONDS})`).pipe(
            Effect.map((rows) => rows[0] && Math.max(1, Math.ceil(rows[0].wait))),
            mapSqlError
          ),
        spendAll: (userId, purposes) =>
          touched(sql`UPDATE account_tokens SET used_at = now()
              WHERE user_id = ${userId} AND purpose IN ${sql.in(purposes)} AND used_at IS NULL
              RETURNING id`).pipe(Effect.map((rows) => rows.length), mapSqlError),
        pendingInvitations: (projectId) =>
          invitationRows(sql`
            SELECT id, email, role, created_at, expires_at FROM account_tokens
            WHERE project_id = ${projectId} AND purpose = 'invitation' AND used_at IS NULL AND expires_at > now()
            ORDER BY created_at, id`).pipe(Effect.map((rows) => rows.map(toInvitation)), mapSqlError),
        pendingInvitation,
        invite: (projectId, email, role) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* withdrawInvitations(projectId, email)
            const id = uuidv7()
            const issued = yield* issue("invitation", { userId: null, email, projectId, role }, id)
            return { invitation: { id, email, role, createdAt: issued.createdAt, expiresAt: issued.expiresAt }, token: issued.token }
          })).pipe(mapSqlError),
        reissueInvitation: (projectId, id) =>
          Effect.gen(function*() {
            const token = newToken()
            const expiresAt = yield* expiryOf("invitation")
            const [row] = yield* invitationRows(sql`
              UPDATE account_tokens SET hash = ${hashToken(token)}, expires_at = ${expiresAt}
              WHERE id = ${id} AND project_id = ${projectId} AND purpose = 'invitation' AND used_at IS NULL AND expires_at > now()
              RETURNING id, email, role, created_at, expires_at`)
            return row && { invitation: toInvitation(row), token }
          }).pipe(mapSqlError),
        withdrawInvitation: (projectId, id) =>
          touched(sql`UPDATE account_tokens SET used_at = now()
              WHERE id = ${id} AND project_id = ${projectId} AND purpose = 'invitation' AND used_at IS NULL
              RETURNING id`).pipe(Effect.map((rows) => rows.length > 0), mapSqlError)
      })
    })
  )
}
