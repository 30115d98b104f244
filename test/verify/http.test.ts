/**
 * POST /v1/verify over HTTP: a real api process whose DNS_SERVERS points at a test DNS server. Keys,
 * validation, the result's shape and flags, and a fuzz property: no string (and no JSON body) makes it
 * throw or answer 500.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startDnsServer, type TestDnsServer } from "../support/dns.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let dns: TestDnsServer
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  dns = await startDnsServer({
    "acme.test": { NS: ["ns1.acme.test"], MX: [{ exchange: "mx.acme.test", priority: 10 }], A: ["192.0.2.1"] },
    "a-only.test": { A: ["192.0.2.2"] },
    "slow.test": { A: ["192.0.2.3"] },
    "xn--bcher-kva.test": { MX: [{ exchange: "mx.xn--bcher-kva.test", priority: 10 }] }
  })
  dns.silence("slow.test")
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("api", { DNS_SERVERS: dns.address })
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
  await dns?.close()
})

const verify = (body: unknown, key: string | null = project.secretKey) =>
  request(api.url, "POST", "/v1/verify", { key: key ?? undefined, body })

const FIELDS = [
  "email",
  "valid",
  "isDisposable",
  "isAlias",
  "isTypo",
  "isPlusAddressed",
  "isPersonalEmail",
  "domainExists",
  "hasWebsite",
  "hasMxRecords",
  "reasons"
]

describe("POST /v1/verify", () => {
  it("answers the verification of an address whose domain receives mail", async () => {
    const res = await verify({ email: "Ada+news@ACME.test" })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      success: true,
      data: {
        email: "ada+news@acme.test",
        valid: true,
        isDisposable: false,
        isAlias: false,
        isTypo: false,
        isPlusAddressed: true,
        isPersonalEmail: false,
        domainExists: true,
        hasWebsite: true,
        hasMxRecords: true,
        reasons: []
      }
    })
  })

  it("reports a missing domain, the implicit MX and a timeout in reasons", async () => {
    const missing = (await verify({ email: "ada@missing.test" })).json.data
    expect(missing).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false })
    expect(missing.reasons).toEqual([expect.stringContaining("does not exist")])

    const aOnly = (await verify({ email: "ada@a-only.test" })).json.data
    expect(aOnly).toMatchObject({ valid: true, domainExists: true, hasMxRecords: true, hasWebsite: true })
    expect(aOnly.reasons).toEqual([expect.stringContaining("implicit MX")])

    const started = Date.now()
    const slow = await verify({ email: "ada@slow.test" })
    expect(slow.status).toBe(200)
    expect(Date.now() - started).toBeLessThan(4_000)
    expect(slow.json.data).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false })
    expect(slow.json.data.reasons.every((reason: string) => reason.includes("timed out"))).toBe(true)
  })

  it("reports lists, typos and IDNs", async () => {
    expect((await verify({ email: "a@mailinator.com" })).json.data).toMatchObject({ valid: false, isDisposable: true })
    expect((await verify({ email: "a@privaterelay.appleid.com" })).json.data).toMatchObject({ isAlias: true })
    expect((await verify({ email: "a@gmail.com" })).json.data).toMatchObject({ isPersonalEmail: true, isTypo: false })
    expect((await verify({ email: "user@gmial.com" })).json.data).toMatchObject({ isTypo: true, suggestedEmail: "user@gmail.com" })
    expect((await verify({ email: "ada@Bücher.test" })).json.data).toMatchObject({
      email: "ada@xn--bcher-kva.test",
      valid: true,
      hasMxRecords: true
    })
  })

  it("answers a malformed address with valid:false and a reason, not an error", async () => {
    const res = await verify({ email: "not an address" })
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({ email: "not an address", valid: false, domainExists: false })
    expect(res.json.data.reasons[0]).toBe("The address has no @.")
  })

  it("takes only the secret key: 401 INVALID_API_KEY for the public key or none", async () => {
    for (const key of [project.publicKey, null, "sk_nope"]) {
      const res = await verify({ email: "a@acme.test" }, key)
      expect(res.status, String(key)).toBe(401)
      expect(res.json.error.code).toBe("INVALID_API_KEY")
    }
  })

  it.each([
    [{}, "required"],
    [{ email: 42 }, "invalid_type"],
    [{ email: null }, "invalid_type"],
    [{ email: ["a@acme.test"] }, "invalid_type"]
  ])("answers 422 VALIDATION_ERROR for %j", async (body, code) => {
    const res = await verify(body)
    expect(res.status).toBe(422)
    expect(res.json.error).toMatchObject({ code: "VALIDATION_ERROR", statusCode: 422 })
    expect(res.json.error.errors).toEqual([expect.objectContaining({ field: "email", code })])
  })

  it("is documented in /openapi.json", async () => {
    const spec = (await request(api.url, "GET", "/openapi.json")).json
    expect(Object.keys(spec.paths["/v1/verify"])).toEqual(["post"])
    expect(spec.components.schemas.EmailVerification.required).toEqual(FIELDS)
  })

  it("answers 422 for a body that is no object and 400 for one that is no JSON", async () => {
    expect((await verify([1, 2])).status).toBe(422)
    expect((await verify("a@acme.test")).status).toBe(422)
    const malformed = await request(api.url, "POST", "/v1/verify", { key: project.secretKey, rawBody: '{"email":' })
    expect(malformed.status).toBe(400)
    expect(malformed.json.error.code).toBe("INVALID_JSON")
  })
})

describe("property: never a 500", () => {
  const strings = fc.oneof(
    fc.string({ unit: "binary", maxLength: 60 }),
    fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 40 }),
    fc.tuple(fc.string({ maxLength: 20 }), fc.constantFrom("@", "@@", "+"), fc.domain()).map((parts) => parts.join("")),
    fc.emailAddress()
  )

  it("any string as email answers 200 with a complete verification", async () => {
    await fc.assert(
      fc.asyncProperty(strings, async (email) => {
        const res = await verify({ email })
        expect(res.status, JSON.stringify(email)).toBe(200)
        expect(res.json.success).toBe(true)
        expect(Object.keys(res.json.data)).toEqual(expect.arrayContaining(FIELDS))
        expect(typeof res.json.data.valid).toBe("boolean")
      }),
      { numRuns: 300 }
    )
  })

  it("any JSON body answers 200, 400 or 422", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.record({ email: fc.jsonValue() })), async (body) => {
        const res = await verify(body)
        expect([200, 400, 422], JSON.stringify(body)).toContain(res.status)
      }),
      { numRuns: 200 }
    )
  })
})
