import { describe, expect, it } from "vitest"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("api", (context) => ({ stack, api, project } = context))

const expectInvalidKey = (res: Awaited<ReturnType<typeof request>>) => {
  expect(res.status).toBe(401)
  expect(res.json.success).toBe(false)
  expect(res.json.error).toMatchObject({ code: "INVALID_API_KEY", statusCode: 401 })
  expect(res.json.error.requestId).toBe(res.headers.get("x-request-id"))
}

describe("API keys", () => {
  it("rejects a missing, malformed or unknown key with 401", async () => {
    expectInvalidKey(await request(api.url, "GET", "/contacts"))
    expectInvalidKey(await request(api.url, "GET", "/contacts", { headers: { authorization: "Basic abc" } }))
    expectInvalidKey(await request(api.url, "GET", "/contacts", { key: "sk_unknown" }))
    expectInvalidKey(await request(api.url, "POST", "/v1/track", { key: "pk_unknown", body: { email: "a@b.co", event: "x" } }))
  })

  it("rejects the public key on secret endpoints and the secret key on /v1/track", async () => {
    expectInvalidKey(await request(api.url, "GET", "/contacts", { key: project.publicKey }))
    expectInvalidKey(await request(api.url, "POST", "/contacts", { key: project.publicKey, body: { email: "a@b.co" } }))
    expectInvalidKey(await request(api.url, "POST", "/v1/track", { key: project.secretKey, body: { email: "a@b.co", event: "x" } }))
    expectInvalidKey(await request(api.url, "POST", "/events/track", { key: project.secretKey, body: { email: "a@b.co", event: "x" } }))
    // ...and nothing was written by the rejected calls.
    const rows = await stack.query("SELECT 1 FROM contacts WHERE project_id = $1", [project.id])
    expect(rows).toHaveLength(0)
  })

  it("accepts each key where it belongs", async () => {
    expect((await request(api.url, "GET", "/contacts", { key: project.secretKey })).status).toBe(200)
    expect((await request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "a@b.co", event: "x" } })).status).toBe(
      200
    )
  })
})

describe("unauthenticated endpoints", () => {
  it("serves /config, /healthz and /readyz without a key", async () => {
    const config = await request(api.url, "GET", "/config")
    expect(config.status).toBe(200)
    expect(config.json.features).toBeTypeOf("object")
    // No SMTP_URL here: a verification mail would only be written to the file outbox.
    expect(config.json.emailVerificationPossible).toBe(false)
    expect((await request(api.url, "GET", "/healthz")).json).toEqual({ status: "ok" })
    expect((await request(api.url, "GET", "/readyz")).json).toEqual({ status: "ready", postgres: true, nats: true })
  })

  it("publishes the OpenAPI document and the Scalar docs", async () => {
    const doc = await request(api.url, "GET", "/openapi.json")
    expect(doc.status).toBe(200)
    expect(doc.json.openapi).toMatch(/^3\./)
    expect(Object.keys(doc.json.paths)).toEqual(expect.arrayContaining(["/v1/track", "/contacts", "/contacts/{id}", "/contacts/lookup"]))
    const listParams = doc.json.paths["/contacts"].get.parameters.map((p: { name: string }) => p.name)
    expect(listParams).toEqual(expect.arrayContaining(["limit", "cursor", "search", "subscribed", "sort", "dir"]))
    const docs = await request(api.url, "GET", "/docs")
    expect(docs.status).toBe(200)
    expect(docs.text).toContain("<html")
  })

  it("answers unknown routes with a 404 envelope", async () => {
    const res = await request(api.url, "GET", "/nowhere", { key: project.secretKey })
    expect(res.status).toBe(404)
    expect(res.json.error.code).toBe("NOT_FOUND")
  })

  it("answers a non-JSON content type with a 415 envelope", async () => {
    const res = await request(api.url, "POST", "/contacts", {
      key: project.secretKey,
      rawBody: "email=a@b.co",
      headers: { "content-type": "text/plain" }
    })
    expect(res.status).toBe(415)
    expect(res.json.error.code).toBe("UNSUPPORTED_MEDIA_TYPE")
  })
})
