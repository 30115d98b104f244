/** Projects and their API keys. Only SHA-256 hashes of keys are stored. */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { uuidv7 } from "../domain/ids.ts"
import type { Project } from "../domain/project.ts"
import { decodeRows, IdRow } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export type KeyKind = "public" | "secret"

/** The request-facing shape, defined in the domain so the HTTP contract can name it. */
export type { Project }

export interface AuthenticatedKey {
  readonly project: Project
  readonly kind: KeyKind
}

export interface CreatedProject extends Project {
  readonly publicKey: string
  readonly secretKey: string
}

export interface ProjectDetails extends Project {
  readonly disabledReason: string | null
  readonly disabledAt: Date | null
  readonly trackingEnabled: boolean
  readonly createdAt: Date
}

export interface RotatedKeys {
  readonly publicKey: string
  readonly secretKey: string
}

export interface MailSettings {
  readonly linkSecret: string
  readonly trackingEnabled: boolean
  readonly sendRatePerSecond: number | null
}

const hashKey = (key: string): Buffer => createHash("sha256").update(key).digest()

const newKey = (prefix: "pk_" | "sk_") => prefix + randomBytes(24).toString("base64url")

/** A project found by a key's hash (read on a cache miss of a request's key: five plain fields). */
const KeyRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  disabled: Schema.Boolean,
  public_key_hash: Schema.Uint8Array,
  secret_key_hash: Schema.Uint8Array
})

const SettingsRow = Schema.Struct({ link_secret: Schema.String, tracking_enabled: Schema.Boolean, rate: Schema.NullOr(Schema.String) })

/** ProjectDetails keeps the driver's Dates (its readers format them). */
const DetailsRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  disabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Schema.Date),
  tracking_enabled: Schema.Boolean,
  created_at: Schema.Date
})

const PublicKeyRow = Schema.Struct({ public_key: Schema.NullOr(Schema.String) })

/** Authenticated keys are cached briefly so the hot path does not hit Postgres for every request. */
const KEY_CACHE_TTL_MS = 5_000

export class Projects extends Context.Service<Projects, {
  readonly create: (name: string) => Effect.Effect<CreatedProject, PersistenceError>
  readonly details: (projectId: string) => Effect.Effect<ProjectDetails | undefined, PersistenceError>
  readonly rename: (projectId: string, name: string) => Effect.Effect<boolean, PersistenceError>
  readonly remove: (projectId: string) => Effect.Effect<boolean, PersistenceError>
  /** Replaces both keys at once; the old ones stop at once here (other processes: see ProjectCacheInvalidation). */
  readonly rotateKeys: (projectId: string) => Effect.Effect<RotatedKeys | undefined, PersistenceError>
  /** Replaces one key, the other unchanged; the new key, or undefined when the project does not exist. */
  readonly rotateKey: (projectId: string, kind: KeyKind) => Effect.Effect<string | undefined, PersistenceError>
  /** The public key in clear: null for a key made before it was kept (until it is rotated); undefined: no project. */
  readonly publicKey: (projectId: string) => Effect.Effect<string | null | undefined, PersistenceError>
  /** Disables the project with a reason (null reason: enables it again). */
  readonly setDisabled: (projectId: string, reason: string | null) => Effect.Effect<boolean, PersistenceError>
  /** Drops this process's cached keys and settings of a project (its keys or state changed). */
  readonly forget: (projectId: string) => Effect.Effect<void>
  /** Drops every cached key and setting (invalidation messages may have been missed). */
  readonly forgetAll: Effect.Effect<void>
  /** The project and key kind for an API key, or undefined when no project has it. */
  readonly authenticate: (key: string) => Effect.Effect<AuthenticatedKey | undefined, PersistenceError>
  /**
   * What `authenticate` would answer from this process's cache, without running an Effect: `{ value }`
   * on a hit (value undefined: no project has the key), undefined when only `authenticate` can tell.
   */
  readonly authenticateCached: (key: string) => { readonly value: AuthenticatedKey | undefined } | undefined
  /** The secret signing the project's links, and whether opens and clicks are tracked. */
  readonly mailSettings: (projectId: string) => Effect.Effect<MailSettings, PersistenceError>
  /** Changes the send rate (emails/s; null = the deployment default, 0 = unthrottled) or tracking. */
  readonly updateMailSettings: (
    projectId: string,
    changes: { readonly sendRatePerSecond?: number | null | undefined; readonly trackingEnabled?: boolean | undefined }
  ) => Effect.Effect<boolean, PersistenceError>
}>()("app/store/Projects") {
  static readonly layer = Layer.effect(
    Projects,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The caches' expiries are read from the Clock; authenticateCached cannot yield, so it reads it unsafely.
      const clock = yield* Clock.Clock
      const ids = decodeRows(IdRow)
      const cache = new Map<string, { value: AuthenticatedKey | undefined; expires: number }>()

      const create = Effect.fn("Projects.create")(function*(name: string) {
        const id = uuidv7()
        const publicKey = newKey("pk_")
        const secretKey = newKey("sk_")
        yield* sql`INSERT INTO projects (id, name, public_key_hash, secret_key_hash, public_key)
                   VALUES (${id}, ${name}, ${hashKey(publicKey)}, ${hashKey(secretKey)}, ${publicKey})`
        return { id, name, disabled: false, publicKey, secretKey }
      }, mapSqlError)

      const byHash = SqlSchema.findAll({
        Request: Schema.Uint8Array,
        Result: KeyRow,
        execute: (hash) =>
          sql`SELECT id, name, disabled, public_key_hash, secret_key_hash FROM projects
              WHERE public_key_hash = ${hash} OR secret_key_hash = ${hash}`
      })

      const lookup = Effect.fn("Projects.lookup")(function*(hash: Buffer) {
        const rows = yield* byHash(hash)
        const row = rows[0]
        if (!row) return undefined
        // The index found the row by hash; the final equality check is constant-time.
        const matches = (stored: Uint8Array) => stored.length === hash.length && timingSafeEqual(Buffer.from(stored), hash)
        const kind: KeyKind | undefined = matches(row.secret_key_hash)
          ? "secret"
          : matches(row.public_key_hash)
          ? "public"
          : undefined
        if (!kind) return undefined
        return { project: { id: row.id, name: row.name, disabled: row.disabled }, kind }
      }, mapSqlError)

      // Keyed by the presented key itself, so a hit costs no hashing.
      const authenticateCached = (key: string) => {
        const hit = cache.get(key)
        return hit && hit.expires > clock.currentTimeMillisUnsafe() ? hit : undefined
      }

      const authenticate = (key: string) =>
        Effect.suspend(() => {
          const now = clock.currentTimeMillisUnsafe()
          const hit = authenticateCached(key)
          if (hit) return Effect.succeed(hit.value)
          return Effect.tap(lookup(hashKey(key)), (value) =>
            Effect.sync(() => {
              if (cache.size > 10_000) cache.clear()
              cache.set(key, { value, expires: now + KEY_CACHE_TTL_MS })
            }))
        })

      const settingsCache = new Map<string, { value: MailSettings; expires: number }>()
      const mailSettings = Effect.fn("Projects.mailSettings")(function*(projectId: string) {
        const hit = settingsCache.get(projectId)
        if (hit && hit.expires > (yield* Clock.currentTimeMillis)) return hit.value
        const [row] = yield* decodeRows(SettingsRow)(sql`
          SELECT link_secret, tracking_enabled, send_rate_per_second::text AS rate FROM projects WHERE id = ${projectId}`)
        if (!row) return yield* Effect.die(new Error(`project ${projectId} does not exist`))
        const value = {
          linkSecret: row.link_secret,
          trackingEnabled: row.tracking_enabled,
          sendRatePerSecond: row.rate === null ? null : Number(row.rate)
        }
        settingsCache.set(projectId, { value, expires: (yield* Clock.currentTimeMillis) + KEY_CACHE_TTL_MS })
        return value
      }, mapSqlError)

      const updateMailSettings = Effect.fn("Projects.updateMailSettings")(function*(
        projectId: string,
        changes: { readonly sendRatePerSecond?: number | null | undefined; readonly trackingEnabled?: boolean | undefined }
      ) {
        const rows = yield* ids(sql`
          UPDATE projects SET
            send_rate_per_second = CASE WHEN ${changes.sendRatePerSecond !== undefined} THEN ${changes.sendRatePerSecond ?? null}::numeric
                                        ELSE send_rate_per_second END,
            tracking_enabled = COALESCE(${changes.trackingEnabled ?? null}::boolean, tracking_enabled),
            updated_at = now()
          WHERE id = ${projectId}
          RETURNING id`)
        settingsCache.delete(projectId)
        return rows.length > 0
      }, mapSqlError)

      const details = Effect.fn("Projects.details")(function*(projectId: string) {
        const [row] = yield* decodeRows(DetailsRow)(
          sql`SELECT id, name, disabled, disabled_reason, disabled_at, tracking_enabled, created_at FROM projects WHERE id = ${projectId}`
        )
        return row && {
          id: row.id,
          name: row.name,
          disabled: row.disabled,
          disabledReason: row.disabled_reason,
          disabledAt: row.disabled_at,
          trackingEnabled: row.tracking_enabled,
          createdAt: row.created_at
        }
      }, mapSqlError)

      const forget = (projectId: string) =>
        Effect.sync(() => {
          for (const [key, entry] of cache) if (entry.value?.project.id === projectId) cache.delete(key)
          settingsCache.delete(projectId)
        })

      const forgetAll = Effect.sync(() => {
        cache.clear()
        settingsCache.clear()
      })

      const rename = Effect.fn("Projects.rename")(function*(projectId: string, name: string) {
        const rows = yield* ids(sql`UPDATE projects SET name = ${name}, updated_at = now() WHERE id = ${projectId} RETURNING id`)
        yield* forget(projectId)
        return rows.length > 0
      }, mapSqlError)

      const remove = Effect.fn("Projects.remove")(function*(projectId: string) {
        const rows = yield* ids(sql`DELETE FROM projects WHERE id = ${projectId} RETURNING id`)
        yield* forget(projectId)
        return rows.length > 0
      }, mapSqlError)

      const rotateKeys = Effect.fn("Projects.rotateKeys")(function*(projectId: string) {
        const publicKey = newKey("pk_")
        const secretKey = newKey("sk_")
        const rows = yield* ids(sql`UPDATE projects SET public_key_hash = ${hashKey(publicKey)}, secret_key_hash = ${hashKey(secretKey)},
                                  public_key = ${publicKey}, updated_at = now()
                                WHERE id = ${projectId} RETURNING id`)
        yield* forget(projectId)
        return rows.length > 0 ? { publicKey, secretKey } : undefined
      }, mapSqlError)

      const rotateKey = Effect.fn("Projects.rotateKey")(function*(projectId: string, kind: KeyKind) {
        const key = newKey(kind === "public" ? "pk_" : "sk_")
        const rows = kind === "public"
          ? yield* ids(sql`UPDATE projects SET public_key_hash = ${hashKey(key)}, public_key = ${key}, updated_at = now()
                       WHERE id = ${projectId} RETURNING id`)
          : yield* ids(sql`UPDATE projects SET secret_key_hash = ${hashKey(key)}, updated_at = now()
                       WHERE id = ${projectId} RETURNING id`)
        yield* forget(projectId)
        return rows.length > 0 ? key : undefined
      }, mapSqlError)

      const publicKey = Effect.fn("Projects.publicKey")(function*(projectId: string) {
        const [row] = yield* decodeRows(PublicKeyRow)(sql`SELECT public_key FROM projects WHERE id = ${projectId}`)
        return row === undefined ? undefined : row.public_key
      }, mapSqlError)

      const setDisabled = Effect.fn("Projects.setDisabled")(function*(projectId: string, reason: string | null) {
        const rows = yield* ids(sql`UPDATE projects SET disabled = ${reason !== null}, disabled_reason = ${reason},
                                  disabled_at = CASE WHEN ${reason !== null} THEN now() END, updated_at = now()
                                WHERE id = ${projectId} RETURNING id`)
        yield* forget(projectId)
        return rows.length > 0
      }, mapSqlError)

      return Projects.of({
        create,
        details,
        rename,
        remove,
        rotateKeys,
        rotateKey,
        publicKey,
        setDisabled,
        forget,
        forgetAll,
        authenticate,
        authenticateCached,
        mailSettings,
        updateMailSettings
      })
    })
  )
}
