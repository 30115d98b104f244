/** Uploaded images, stored content-addressed in Postgres (the same bytes are stored once). */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"

export interface StoredUpload {
  readonly id: string
  readonly contentType: string
  readonly bytes: Uint8Array
}

export class Uploads extends Context.Service<Uploads, {
  /** Stores the bytes (once per content); answers their id, the SHA-256 hex of the bytes. */
  readonly put: (bytes: Uint8Array, contentType: string) => Effect.Effect<string>
  readonly get: (id: string) => Effect.Effect<StoredUpload | undefined>
}>()("app/store/Uploads") {
  static readonly layer = Layer.effect(
    Uploads,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return Uploads.of({
        put: (bytes, contentType) => {
          const id = createHash("sha256").update(bytes).digest("hex")
          return sql`INSERT INTO uploads (id, content_type, bytes, size) VALUES (${id}, ${contentType}, ${Buffer.from(bytes)}, ${bytes.length})
                     ON CONFLICT (id) DO NOTHING`.pipe(Effect.as(id), Effect.orDie)
        },
        get: (id) =>
          sql<{ id: string; content_type: string; bytes: Uint8Array }>`SELECT id, content_type, bytes FROM uploads WHERE id = ${id}`.pipe(
            Effect.map((rows) => rows[0] && { id: rows[0].id, contentType: rows[0].content_type, bytes: rows[0].bytes }),
            Effect.orDie
          )
      })
    })
  )
}
