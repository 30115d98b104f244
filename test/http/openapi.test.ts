/**
 * The service's own /openapi.json, read the way its users read it: validated as OpenAPI 3.1, turned into
 * TypeScript by openapi-typescript (the generator most clients use), and held to what the gateway and
 * handlers really answer.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { execFile, spawn } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { beforeAll, describe, expect, it } from "vitest"
import { request, withStack, type Service, type TestProject } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname

let api: Service
let project: TestProject
withStack("api", (context) => ({ api, project } = context))

let document: any
beforeAll(async () => {
  document = await fetch(`${api.url}/openapi.json`).then((response) => response.json())
})

const operations = (): Array<{ method: string; path: string; operation: any }> =>
  Object.entries<any>(document.paths).flatMap(([path, item]) =>
    Object.entries<any>(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation }))
  )

/** Every schema object in the document (JSON Schema nodes and their sub-schemas). */
const nodes = (value: unknown, out: Array<Record<string, any>> = []): Array<Record<string, any>> => {
  if (Array.isArray(value)) value.forEach((item) => nodes(item, out))
  else if (typeof value === "object" && value !== null) {
    out.push(value as Record<string, any>)
    Object.values(value).forEach((item) => nodes(item, out))
  }
  return out
}

/** openapi-typescript over the document (see test/support/openapiTypescript.ts). */
const generateTypes = (input: unknown) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ["test/support/openapiTypescript.ts"], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.once("exit", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`openapi-typescript exited with ${code}: ${stderr}`))))
    child.stdin.end(JSON.stringify(input))
  })

describe("/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(document))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe("3.1")
  })

  it("types counts as integers and amounts as finite numbers: no Infinity or NaN anywhere", () => {
    const all = nodes(document)
    expect(
      all.filter((node) =>
        Array.isArray(node.enum) && node.enum.some((value: unknown) => ["NaN", "Infinity", "-Infinity"].includes(value as string))
      )
    )
      .toEqual([])
    const page = document.paths["/templates"].get.responses["200"].content["application/json"].schema.properties
    for (const key of ["page", "pageSize", "total", "totalPages"]) expect(page[key], key).toMatchObject({ type: "integer", minimum: 0 })
    const campaign = document.components.schemas.Campaign.properties
    for (const key of ["totalRecipients", "sentCount", "deliveredCount", "openedCount", "clickedCount", "bouncedCount"]) {
      expect(campaign[key], key).toMatchObject({ type: "integer" })
    }
    expect(document.components.schemas.Segment.properties.memberCount).toMatchObject({ type: "integer" })
    expect(document.components.schemas.CampaignStats.properties.rates.properties.open).toEqual({ type: "number", minimum: 0 })
    const batch = document.paths["/v1/track/batch"].post
    const outcome = batch.responses["200"].content["application/json"].schema.properties.data.properties
    expect(outcome.accepted).toMatchObject({ type: "integer", minimum: 0 })
    expect(outcome.rejected.items.properties.index).toMatchObject({ type: "integer", minimum: 0 })
    // The batch decodes its events one by one, yet documents each as the /v1/track body.
    expect(batch.requestBody.content["application/json"].schema.properties.events)
      .toMatchObject({ type: "array", minItems: 1, maxItems: 500, items: { $ref: "#/components/schemas/TrackEvent" } })
    expect(document.paths["/v1/track"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/TrackEvent"
    })
  })

  it("types query parameters: integers with their bounds, booleans, enums and date-times", () => {
    const query = (path: string, method = "get") =>
      Object.fromEntries(document.paths[path][method].parameters.filter((p: any) => p.in === "query").map((p: any) => [p.name, p.schema]))
    expect(query("/contacts")).toEqual({
      limit: { type: "integer", minimum: 1, maximum: 100, default: 20 },
      cursor: { type: "string" },
      search: { type: "string" },
      subscribed: { type: "boolean" },
      segment: { type: "string", format: "uuid" },
      field: { type: "string" },
      value: { type: "string" },
      sort: { type: "string", enum: ["createdAt", "email"], default: "createdAt" },
      dir: { type: "string", enum: ["asc", "desc"], default: "desc" }
    })
    expect(query("/templates")).toMatchObject({
      page: { type: "integer", minimum: 1, default: 1 },
      pageSize: { type: "integer", minimum: 1, maximum: 100, default: 20 },
      type: { type: "string", enum: ["TRANSACTIONAL", "MARKETING", "HEADLESS"] }
    })
    expect(query("/campaigns").status).toEqual({ type: "string", enum: ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"] })
    expect(query("/events/stats")).toEqual({ from: { type: "string", format: "date-time" }, to: { type: "string", format: "date-time" } })
    expect(query("/dead-letters").replayed).toEqual({ type: "boolean" })
    expect(query("/destinations/{id}/deliveries").status).toMatchObject({
      type: "string",
      enum: ["pending", "succeeded", "failed", "parked"]
    })
    expect(query("/workflows/{id}/steps/{stepId}", "delete").splice).toEqual({ type: "boolean" })
    // Plain strings are left only to free text: no number, flag, choice or date is typed as a string.
    const plain = operations().flatMap(({ operation }) =>
      operation.parameters
        .filter((p: any) => p.in === "query" && p.schema.type === "string" && p.schema.enum === undefined && p.schema.format === undefined)
        .map((p: any) => p.name as string)
    )
    // code, state and error: the opaque values an OAuth provider sends back to /auth/oauth/:provider/callback;
    // tz is a zone name, types and status comma-separated lists of activity types and email statuses (described
    // on the parameter), recipient part of an address; field a custom field's name and value the text its value
    // reads as (GET /contacts).
    expect([...new Set(plain)].sort()).toEqual([
      "code",
      "cursor",
      "error",
      "field",
      "name",
      "recipient",
      "search",
      "state",
      "status",
      "types",
      "tz",
      "value"
    ])
  })

  it("keeps the lenient reading the spec asks for: unusable sort, dir, limit and page values fall back to defaults", async () => {
    const secret = (path: string) => request(api.url, "GET", path, { key: project.secretKey })
    const contacts = await secret("/contacts?limit=500&sort=bogus&dir=sideways&subscribed=maybe")
    expect(contacts.status).toBe(200)
    const templates = await secret("/templates?page=0&pageSize=abc&type=BOGUS&sort=size")
    expect(templates.status).toBe(200)
    expect(templates.json).toMatchObject({ page: 1, pageSize: 20 })
    expect((await secret("/templates?pageSize=1000")).json.pageSize).toBe(100)
  })

  it("answers the statuses it documents for every body: 415 for another media type, 413 past the limit, 400 for malformed JSON", async () => {
    const send = (body: string, contentType = "application/json") =>
      request(api.url, "POST", "/contacts/lookup", { key: project.secretKey, rawBody: body, headers: { "content-type": contentType } })
    for (
      const [response, status, code] of [
        [await send('{"emails":[]}', "text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE"],
        [await send(JSON.stringify({ emails: ["x".repeat(2 * 1024 * 1024)] })), 413, "PAYLOAD_TOO_LARGE"],
        [await send('{"emails":'), 400, "INVALID_JSON"]
      ] as const
    ) {
      expect(response.status, response.text).toBe(status)
      expect(response.json.error).toMatchObject({ code, statusCode: status })
      expect(document.paths["/contacts/lookup"].post.responses).toHaveProperty(String(status))
    }
  })

  it("lists, per operation, every status the gateway can answer for its shape, each with the envelope", () => {
    const missing: Array<string> = []
    const need = (where: string, statuses: Record<string, unknown>, ...wanted: Array<string>) => {
      for (const status of wanted) if (!(status in statuses)) missing.push(`${where}: ${status}`)
    }
    for (const { method, path, operation } of operations()) {
      const where = `${method} ${path}`
      const responses = operation.responses
      // Every operation can find Postgres or the event stream away, or the server starting or stopping.
      need(where, responses, "500", "503")
      if (operation.security.length > 0) need(where, responses, "401", "403", "429")
      if (operation.requestBody) need(where, responses, "400", "413", "415", "422")
      if (operation.parameters.length > 0) need(where, responses, "422")
      // A path segment that is not valid percent-encoded UTF-8 matches no route.
      if (operation.parameters.some((p: any) => p.in === "path")) need(where, responses, "404")
      if (operation.parameters.some((p: any) => p.name === "cursor")) need(where, responses, "400")
      for (const [status, response] of Object.entries<any>(responses)) {
        if (Number(status) < 400) continue
        const schema = response.content?.["application/json"]?.schema
        if (!schema) continue // the HTML pages of links in mail
        const refs = (schema.anyOf ?? [schema]).map((member: any) => member.$ref)
        expect(refs, `${where} ${status}`).toContain(
          status === "503" && path === "/readyz" ? "#/components/schemas/NotReady" : `#/components/schemas/Error${status}`
        )
      }
    }
    expect(missing).toEqual([])
  })

  it("names the three endpoints that answer the reference's flat LegacyError, and no other", () => {
    const legacy = operations()
      .filter(({ operation }) => JSON.stringify(operation.responses).includes("#/components/schemas/LegacyError"))
      .map(({ method, path }) => `${method} ${path}`)
    expect(legacy.sort()).toEqual(["POST /contacts", "POST /segments", "POST /templates"])
    expect(document.components.schemas.LegacyError).toMatchObject({
      type: "object",
      properties: { error: { type: "string" } },
      required: ["error"]
    })
    expect(document.info.description).toContain("LegacyError")
  })

  it("lists the event destination endpoints", () => {
    const listed = operations().filter(({ path }) => path.startsWith("/destinations")).map(({ method, path }) => `${method} ${path}`)
    expect(listed.sort()).toEqual([
      "DELETE /destinations/{id}",
      "GET /destinations",
      "GET /destinations/{id}",
      "GET /destinations/{id}/deliveries",
      "PATCH /destinations/{id}",
      "POST /destinations",
      "POST /destinations/{id}/deliveries/{deliveryId}/replay",
      "POST /destinations/{id}/replay",
      "POST /destinations/{id}/rotate-secret",
      "POST /destinations/{id}/test"
    ])
    expect(document.components.schemas.DestinationWithSecret.required).toContain("secret")
    expect(document.components.schemas.Destination.properties.secret).toBeUndefined()
  })

  it("answers 201 on every creation", () => {
    const created = [
      "/contacts",
      "/templates",
      "/campaigns",
      "/segments",
      "/workflows",
      "/workflows/{id}/steps",
      "/workflows/{id}/transitions",
      "/workflows/{id}/executions",
      "/domains",
      "/templates/{id}/duplicate",
      "/campaigns/{id}/duplicate",
      "/destinations"
    ]
    for (const path of created) expect(Object.keys(document.paths[path].post.responses), path).toContain("201")
  })

  it("gives openapi-typescript what it needs for exact types: no NaN literals, typed query parameters", async () => {
    const types = await generateTypes(document)
    expect(types).not.toMatch(/"NaN"|"Infinity"/)
    expect(types).toContain("export interface operations")
    // Held to the type checker: the generated types must say exactly these things.
    const dir = await mkdtemp(join(tmpdir(), "openapi-types-"))
    try {
      await writeFile(join(dir, "api.ts"), types)
      await writeFile(
        join(dir, "check.ts"),
        `
import type { operations } from "./api.ts"
type Query<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>
type Json<K extends keyof operations, S extends keyof operations[K]["responses"]> =
  operations[K]["responses"][S] extends { content: { "application/json": infer B } } ? B : never
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
export const checks: Array<true> = [
  true as Same<Query<"contacts.list">["limit"], number | undefined>,
  true as Same<Query<"contacts.list">["subscribed"], boolean | undefined>,
  true as Same<Query<"contacts.list">["sort"], "createdAt" | "email" | undefined>,
  true as Same<Query<"templates.list">["page"], number | undefined>,
  true as Same<Query<"templates.list">["pageSize"], number | undefined>,
  true as Same<Query<"campaigns.list">["status"], "DRAFT" | "SCHEDULED" | "SENDING" | "SENT" | "CANCELLED" | undefined>,
  true as Same<Query<"workflows.deleteStep">["splice"], boolean | undefined>,
  true as Same<Json<"templates.list", 200>["total"], number>,
  true as Same<Json<"contacts.list", 200>["total"], number>,
  true as Same<Json<"segments.list", 200>[number]["memberCount"], number>,
  true as Same<Json<"trackBatch", 200>["data"]["accepted"], number>,
  true as Same<Json<"trackBatch", 200>["data"]["rejected"][number]["index"], number>,
  true as Same<NonNullable<operations["trackBatch"]["requestBody"]>["content"]["application/json"]["events"][number]["event"], string>,
  // Open objects (custom data, details) are typed as open, not as objects without keys.
  true as Same<Json<"contacts.get", 200>["data"], { [key: string]: unknown }>,
  true as Same<NonNullable<NonNullable<operations["contacts.upsert"]["requestBody"]>["content"]["application/json"]["data"]>, { [key: string]: unknown }>,
  // POST /contacts answers either 400 shape: the LegacyError for a missing email, the envelope otherwise.
  true as Same<Extract<Json<"contacts.upsert", 400>, { error: string }>, { error: string }>,
  true as Same<Exclude<Json<"contacts.upsert", 400>, { error: string }>["error"]["statusCode"], 400>,
  true as Same<Exclude<Json<"contacts.upsert", 400>, { error: string }>["error"]["details"], { [key: string]: unknown } | undefined>
]
`
      )
      const tsc = join(ROOT, "node_modules/.bin/tsc")
      await promisify(execFile)(
        tsc,
        [
          "--noEmit",
          "--strict",
          "--target",
          "ES2024",
          "--module",
          "NodeNext",
          "--moduleResolution",
          "NodeNext",
          "--allowImportingTsExtensions",
          "--skipLibCheck",
          join(dir, "check.ts")
        ], // From the temporary directory: TypeScript refuses file arguments beside a tsconfig.json (TS5112).
        { cwd: dir }
      ).catch((error) => {
        throw new Error(`the generated types do not say what the document means:\n${error.stdout}${error.stderr}`)
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
