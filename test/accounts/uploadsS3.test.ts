/** Image uploads stored in an S3-compatible bucket (S3_BUCKET), against a local S3 server (s3rver). */
import { mkdtempSync } from "node:fs"
import { readdir } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import S3rver from "s3rver"
import { afterAll, beforeAll, expect, it } from "vitest"
import { createStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")
const directory = mkdtempSync(join(tmpdir(), "ms-s3-"))

let s3: S3rver
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: "images", configs: [] }] })
  const { port } = await s3.run()
  stack = await createStack({
    RATE_LIMIT_PER_MINUTE: "0",
    S3_BUCKET: "images",
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER"
  })
  api = await stack.start("api")
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
  await s3?.close()
})

it("stores the image in the bucket, not in Postgres, and serves it under PUBLIC_URL", async () => {
  const form = new FormData()
  form.append("file", new Blob([PNG], { type: "image/png" }), "pixel.png")
  const reply = await fetch(`${api.url}/uploads/image`, {
    method: "POST",
    headers: { authorization: `Bearer ${project.secretKey}` },
    body: form
  })
  expect(reply.status).toBe(201)
  const { url } = await reply.json() as { url: string }
  const name = new URL(url).pathname.split("/").pop()!
  expect((await stack.query("SELECT 1 FROM uploads")).length).toBe(0)
  expect(JSON.stringify(await readdir(join(directory, "images"), { recursive: true }))).toContain(name.replace(/\.png$/, ""))
  const served = await fetch(`${api.url}/uploads/${name}`)
  expect(served.status).toBe(200)
  expect(served.headers.get("content-type")).toBe("image/png")
  expect(served.headers.get("x-content-type-options")).toBe("nosniff")
  expect(Buffer.from(await served.arrayBuffer())).toEqual(PNG)
  expect((await fetch(`${api.url}/uploads/${"a".repeat(64)}.png`)).status).toBe(404)
})
