/**
 * Email → contact id for the track hot path. Known contacts come from an in-process cache; misses of
 * all concurrent requests are resolved by one statement that inserts the new contacts and reads the
 * existing ones (group commit). The project's actor applies data and subscription changes later, in
 * stream order; a contact created here starts with empty data and the default subscription.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { makeGroupCommit } from "../lib/GroupCommit.ts"
import { decodeRows } from "../store/columns.ts"
import { Invalidations } from "../stream/Invalidations.ts"

export interface ResolvedContact {
  readonly id: string
  /** True when this call created it. */
  readonly created: boolean
}

interface Lookup {
  readonly projectId: string
  readonly email: string
  readonly subscribed: boolean
}

/** A contact found or created for a lookup: four plain fields, decoded once per batch of up to 500. */
const resolvedRows = decodeRows(
  Schema.Struct({ id: Schema.String, project_id: Schema.String, email: Schema.String, created: Schema.Boolean })
)

const CACHE_TTL_MS = 60_000
const CACHE_MAX = 200_000

interface Forgotten {
  readonly projectId: string
  readonly email: string
}

const INVALIDATION_TOPIC = "contacts"

export class ContactDirectory extends Context.Service<ContactDirectory, {
  readonly resolve: (projectId: string, email: string, subscribedIfNew: boolean) => Effect.Effect<ResolvedContact, SqlError.SqlError>
  /** Several emails of one project at once (a batch request): cache hits at once, the misses in one flush. */
  readonly resolveAll: (
    projectId: string,
    lookups: ReadonlyArray<{ readonly email: string; readonly subscribedIfNew: boolean }>
  ) => Effect.Effect<ReadonlyArray<ResolvedContact>, SqlError.SqlError>
  /** The contact `resolve` would answer from this process's cache (never a creation), without an Effect; undefined on a miss. */
  readonly cached: (projectId: string, email: string) => ResolvedContact | undefined
  /**
   * Drop a cached id in every api process: call after committing a change that ends the email → id
   * mapping (the contact was deleted or its email changed).
   */
  readonly forget: (projectId: string, email: string) => Effect.Effect<void>
}>()("app/ingest/ContactDirectory") {
  static readonly layer = Layer.effect(
    ContactDirectory,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The cache reads the time on the per-event path, synchronously: the Clock captured here, read unsafely.
      const clock = yield* Clock.Clock
      const invalidations = yield* Invalidations
      const cache = new Map<string, { id: string; expires: number }>()
      // Bumped by every invalidation: a lookup that was running meanwhile may have read the old
      // mapping, so its answers are used but not cached.
      let generation = 0

      yield* invalidations.subscribe<Forgotten>(INVALIDATION_TOPIC, {
        onMessage: ({ projectId, email }) => {
          generation++
          cache.delete(`${projectId}|${email}`)
        },
        onGap: () => {
          generation++
          cache.clear()
        }
      })

      const resolveBatch = (items: ReadonlyArray<Lookup>) =>
        Effect.gen(function*() {
          const startedAt = generation
          // Several requests for one new email in a batch must get the same contact.
          const unique = new Map<string, Lookup & { id: string }>()
          for (const item of items) {
            const key = `${item.projectId}|${item.email}`
            if (!unique.has(key)) unique.set(key, { ...item, id: uuidv7() })
          }
          const found = new Map<string, ResolvedContact>()
          let pending = [...unique.values()]
          for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
            const now = new Date(yield* Clock.currentTimeMillis).toISOString()
            const rows = yield* resolvedRows(sql`
              WITH input AS (
                SELECT * FROM jsonb_to_recordset(${JSON.stringify(pending)}::jsonb)
                  AS x(id uuid, "projectId" uuid, email text, subscribed boolean)
              ), ins AS (
                INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                SELECT id, "projectId", email, subscribed, '{}'::jsonb, ${now}::timestamptz, ${now}::timestamptz FROM input
                ON CONFLICT (project_id, email) DO NOTHING
                RETURNING id, project_id, email
              )
              SELECT id, project_id, email, true AS created FROM ins
              UNION ALL
              SELECT c.id, c.project_id, c.email, false FROM contacts c
              JOIN input i ON c.project_id = i."projectId" AND c.email = i.email`).pipe(
              // The service answers SqlError (its callers retry on it); a row of its own statement that does not decode is a bug.
              Effect.catchTag("SchemaError", Effect.die)
            )
            for (const row of rows) found.set(`${row.project_id}|${row.email}`, { id: row.id, created: row.created })
            // A contact committed by someone else after this statement's snapshot: ask again.
            pending = pending.filter((item) => !found.has(`${item.projectId}|${item.email}`))
          }
          const expires = (yield* Clock.currentTimeMillis) + CACHE_TTL_MS
          if (cache.size > CACHE_MAX) cache.clear()
          const createdOnce = new Set<string>()
          return items.map((item) => {
            const key = `${item.projectId}|${item.email}`
            const resolved = found.get(key)
            if (!resolved) throw new Error(`could not resolve contact ${item.email}`)
            if (generation === startedAt) cache.set(key, { id: resolved.id, expires })
            // Only the first request for a new email reports the creation.
            const created = resolved.created && !createdOnce.has(key)
            if (resolved.created) createdOnce.add(key)
            return { id: resolved.id, created }
          })
        })

      const batcher = yield* makeGroupCommit({ flush: resolveBatch, maxBatch: 500, concurrency: 2 })

      const cached = (projectId: string, email: string, now = clock.currentTimeMillisUnsafe()): ResolvedContact | undefined => {
        const hit = cache.get(`${projectId}|${email}`)
        return hit && hit.expires > now ? { id: hit.id, created: false } : undefined
      }

      const resolveAll: ContactDirectory["Service"]["resolveAll"] = (projectId, lookups) =>
        Effect.suspend(() => {
          const now = clock.currentTimeMillisUnsafe()
          const results = new Array<ResolvedContact>(lookups.length)
          const misses: Array<number> = []
          lookups.forEach(({ email }, index) => {
            const hit = cached(projectId, email, now)
            if (hit) results[index] = hit
            else misses.push(index)
          })
          if (misses.length === 0) return Effect.succeed(results)
          return Effect.map(
            batcher.submitAll(
              misses.map((index) => ({ projectId, email: lookups[index]!.email, subscribed: lookups[index]!.subscribedIfNew }))
            ),
            (resolved) => {
              misses.forEach((index, n) => (results[index] = resolved[n]!))
              return results
            }
          )
        })

      return ContactDirectory.of({
        resolve: (projectId, email, subscribedIfNew) =>
          Effect.map(resolveAll(projectId, [{ email, subscribedIfNew }]), (resolved) => resolved[0]!),
        resolveAll,
        cached: (projectId, email) => cached(projectId, email),
        forget: (projectId, email) =>
          Effect.suspend(() => {
            generation++
            cache.delete(`${projectId}|${email}`)
            return invalidations.publish(INVALIDATION_TOPIC, { projectId, email } satisfies Forgotten)
          })
      })
    })
  )
}
