/** Dashboard users, their linked OAuth identities and their sessions (the server-side half of the cookie). */
import { Clock, Context, Data, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import type { User } from "../domain/user.ts"
import { CountRow, decodeRows, IdRow } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

/** A `users` row as `columns` select it. */
const UserRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  password_hash: Schema.NullOr(Schema.String),
  email_verified_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
type UserRow = typeof UserRow.Type

export interface StoredUser extends User {
  readonly passwordHash: string | null
}

const toUser = (row: UserRow): StoredUser => ({
  id: row.id,
  email: row.email,
  emailVerified: row.email_verified_at !== null,
  hasPassword: row.password_hash !== null,
  createdAt: row.created_at,
  passwordHash: row.password_hash
})

/** The address already has an account. */
export class EmailTaken extends Data.TaggedError("EmailTaken") {}

export class Users extends Context.Service<Users, {
  /** Creates a user (email lower-cased by the caller); EmailTaken when the address has an account. */
  readonly create: (input: {
    readonly email: string
    readonly passwordHash: string | null
    readonly emailVerified: boolean
  }) => Effect.Effect<StoredUser, EmailTaken | PersistenceError>
  readonly byEmail: (email: string) => Effect.Effect<StoredUser | undefined, PersistenceError>
  readonly byId: (id: string) => Effect.Effect<StoredUser | undefined, PersistenceError>
  readonly count: Effect.Effect<number, PersistenceError>
  readonly setPassword: (userId: string, passwordHash: string) => Effect.Effect<void, PersistenceError>
  readonly markVerified: (userId: string) => Effect.Effect<void, PersistenceError>
  readonly byIdentity: (provider: string, subject: string) => Effect.Effect<StoredUser | undefined, PersistenceError>
  readonly linkIdentity: (userId: string, provider: string, subject: string) => Effect.Effect<void, PersistenceError>
  readonly unlinkIdentities: (userId: string) => Effect.Effect<void, PersistenceError>
  /** Whether the user is the installation's first (who owns it whatever else happens). */
  readonly isFirst: (userId: string) => Effect.Effect<boolean, PersistenceError>
  readonly createSession: (
    userId: string,
    ttlHours: number
  ) => Effect.Effect<{ readonly id: string; readonly expiresAt: Date }, PersistenceError>
  /** The user of a live session (not revoked, not expired). */
  readonly sessionUser: (sessionId: string) => Effect.Effect<StoredUser | undefined, PersistenceError>
  readonly revokeSession: (sessionId: string) => Effect.Effect<void, PersistenceError>
  readonly revokeAllSessions: (userId: string) => Effect.Effect<void, PersistenceError>
  /** Ends every session of the user but `keepSessionId` (the one changing the password). */
  readonly revokeOtherSessions: (userId: string, keepSessionId: string) => Effect.Effect<void, PersistenceError>
}>()("app/store/Users") {
  static readonly layer = Layer.effect(
    Users,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock
      const columns = sql.literal("u.id, u.email, u.password_hash, u.email_verified_at, u.created_at")
      const decodeUserRows = Schema.decodeUnknownEffect(Schema.Array(UserRow))

      const create = Effect.fn("Users.create")(function*(input: {
        readonly email: string
        readonly passwordHash: string | null
        readonly emailVerified: boolean
      }) {
        const rows = yield* sql`
          INSERT INTO users AS u (id, email, password_hash, email_verified_at)
          VALUES (${uuidv7()}, ${input.email}, ${input.passwordHash}, ${
          input.emailVerified ? new Date(yield* Clock.currentTimeMillis) : null
        })
          ON CONFLICT (email) DO NOTHING
          RETURNING ${columns}`.pipe(Effect.flatMap(decodeUserRows))
        const row = rows[0]
        if (!row) return yield* Effect.fail(new EmailTaken())
        return toUser(row)
      }, mapSqlError)

      /** The first row, decoded, as a user (undefined for none). */
      const one = (rows: ReadonlyArray<unknown>) => Effect.map(decodeUserRows(rows.slice(0, 1)), ([row]) => row && toUser(row))

      return Users.of({
        create,
        byEmail: (email) => sql`SELECT ${columns} FROM users u WHERE u.email = ${email}`.pipe(Effect.flatMap(one), mapSqlError),
        byId: (id) => sql`SELECT ${columns} FROM users u WHERE u.id = ${id}`.pipe(Effect.flatMap(one), mapSqlError),
        count: decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM users`).pipe(Effect.map((rows) => rows[0]!.n), mapSqlError),
        setPassword: (userId, passwordHash) =>
          sql`UPDATE users SET password_hash = ${passwordHash}, updated_at = now() WHERE id = ${userId}`.pipe(Effect.asVoid, mapSqlError),
        markVerified: (userId) =>
          sql`UPDATE users SET email_verified_at = COALESCE(email_verified_at, now()), updated_at = now() WHERE id = ${userId}`.pipe(
            Effect.asVoid,
            mapSqlError
          ),
        byIdentity: (provider, subject) =>
          sql`SELECT ${columns} FROM user_identities i JOIN users u ON u.id = i.user_id
                       WHERE i.provider = ${provider} AND i.subject = ${subject}`.pipe(Effect.flatMap(one), mapSqlError),
        linkIdentity: (userId, provider, subject) =>
          sql`INSERT INTO user_identities (provider, subject, user_id) VALUES (${provider}, ${subject}, ${userId})
              ON CONFLICT (provider, subject) DO NOTHING`.pipe(Effect.asVoid, mapSqlError),
        unlinkIdentities: (userId) => sql`DELETE FROM user_identities WHERE user_id = ${userId}`.pipe(Effect.asVoid, mapSqlError),
        isFirst: (userId) =>
          decodeRows(IdRow)(sql`SELECT id FROM users ORDER BY created_at, id LIMIT 1`).pipe(
            Effect.map((rows) => rows[0]?.id === userId),
            mapSqlError
          ),
        createSession: (userId, ttlHours) => {
          const id = uuidv7()
          const expiresAt = new Date(clock.currentTimeMillisUnsafe() + ttlHours * 3_600_000)
          return sql`INSERT INTO sessions (id, user_id, expires_at) VALUES (${id}, ${userId}, ${expiresAt})`.pipe(
            Effect.as({ id, expiresAt }),
            mapSqlError
          )
        },
        sessionUser: (sessionId) =>
          sql`SELECT ${columns} FROM sessions s JOIN users u ON u.id = s.user_id
                       WHERE s.id = ${sessionId} AND s.revoked_at IS NULL AND s.expires_at > now()`.pipe(Effect.flatMap(one), mapSqlError),
        revokeSession: (sessionId) =>
          sql`UPDATE sessions SET revoked_at = now() WHERE id = ${sessionId} AND revoked_at IS NULL`.pipe(Effect.asVoid, mapSqlError),
        revokeAllSessions: (userId) =>
          sql`UPDATE sessions SET revoked_at = now() WHERE user_id = ${userId} AND revoked_at IS NULL`.pipe(Effect.asVoid, mapSqlError),
        revokeOtherSessions: (userId, keepSessionId) =>
          sql`UPDATE sessions SET revoked_at = now() WHERE user_id = ${userId} AND id <> ${keepSessionId} AND revoked_at IS NULL`.pipe(
            Effect.asVoid,
            mapSqlError
          )
      })
    })
  )
}
