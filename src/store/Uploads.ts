/**
 * Uploaded images, content-addressed (the key is the SHA-256 of the bytes, so the same image is stored
 * once): in Postgres by default, or in an S3-compatible bucket when S3_BUCKET is set (requests signed
 * with SigV4 by `aws4fetch`, objects addressed path-style). Either way they are served by the api.
 */
import { AwsClient } from "aws4fetch"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { AppConfig } from "../config.ts"
import { decodeRows } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface StoredUpload {
  readonly id: string
  readonly contentType: string
  readonly bytes: Uint8Array
}

interface Backend {
  readonly put: (id: string, bytes: Uint8Array, contentType: string) => Effect.Effect<void, PersistenceError>
  readonly get: (id: string) => Effect.Effect<StoredUpload | undefined, PersistenceError>
}

const uploadRows = decodeRows(Schema.Struct({ id: Schema.String, content_type: Schema.String, bytes: Schema.Uint8Array }))

const postgresBackend = (sql: SqlClient.SqlClient): Backend => ({
  put: (id, bytes, contentType) =>
    sql`INSERT INTO uploads (id, content_type, bytes, size) VALUES (${id}, ${contentType}, ${Buffer.from(bytes)}, ${bytes.length})
        ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid, mapSqlError),
  get: (id) =>
    uploadRows(sql`SELECT id, content_type, bytes FROM uploads WHERE id = ${id}`).pipe(
      Effect.map((rows) => rows[0] && { id: rows[0].id, contentType: rows[0].content_type, bytes: rows[0].bytes }),
      mapSqlError
    )
})

const s3Backend = (
  options: { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string }
): Backend => {
  const client = new AwsClient({
    accessKeyId: options.accessKeyId,
    secretAccessKey: options.secretAccessKey,
    service: "s3",
    region: options.region
  })
  const objectUrl = (id: string) => `${options.endpoint}/${options.bucket}/${id}`
  return {
    put: (id, bytes, contentType) =>
      Effect.promise(async () => {
        const response = await client.fetch(objectUrl(id), {
          method: "PUT",
          body: new Uint8Array(bytes),
          headers: { "content-type": contentType }
        })
        if (!response.ok) throw new Error(`S3 PUT ${id} answered ${response.status}: ${(await response.text()).slice(0, 200)}`)
      }),
    get: (id) =>
      Effect.promise(async () => {
        const response = await client.fetch(objectUrl(id))
        if (response.status === 404) return undefined
        if (!response.ok) throw new Error(`S3 GET ${id} answered ${response.status}`)
        return {
          id,
          contentType: response.headers.get("content-type") ?? "application/octet-stream",
          bytes: new Uint8Array(await response.arrayBuffer())
        }
      })
  }
}

export class Uploads extends Context.Service<Uploads, {
  /** Stores the bytes (once per content); answers their id, the SHA-256 hex of the bytes. */
  readonly put: (bytes: Uint8Array, contentType: string) => Effect.Effect<string, PersistenceError>
  readonly get: (id: string) => Effect.Effect<StoredUpload | undefined, PersistenceError>
  readonly storage: "postgres" | "s3"
}>()("app/store/Uploads") {
  static readonly layer = Layer.effect(
    Uploads,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const bucket = config.s3Bucket
      const backend = bucket
        ? s3Backend({
          endpoint: config.s3Endpoint ?? `https://s3.${config.s3Region}.amazonaws.com`,
          bucket,
          region: config.s3Region,
          accessKeyId: config.s3AccessKeyId ?? "",
          secretAccessKey: config.s3SecretAccessKey ? Redacted.value(config.s3SecretAccessKey) : ""
        })
        : postgresBackend(sql)
      return Uploads.of({
        storage: bucket ? "s3" : "postgres",
        put: (bytes, contentType) => {
          const id = createHash("sha256").update(bytes).digest("hex")
          return Effect.as(backend.put(id, bytes, contentType), id)
        },
        get: backend.get
      })
    })
  )
}
