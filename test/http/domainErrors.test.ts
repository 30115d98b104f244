/**
 * Typed domain errors (src/domain/errors.ts) reach clients as the spec's error envelope: each one,
 * failed by a handler of an endpoint that declares it, answers its status and code with the request
 * id of the `x-request-id` header; a repository's PersistenceError answers the logged 500. Every
 * domain error is declared on some endpoint of the real contract, and /openapi.json lists it.
 */
import { Effect, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { type DomainError, DomainErrors, DuplicateEmail } from "../../src/domain/errors.ts"
import { Api } from "../../src/http/api/Api.ts"
import { declared, ErrorEnvelope, serverErrors } from "../../src/http/api/errors.ts"
import { rendered } from "../../src/http/errors.ts"
import { PersistenceError } from "../../src/store/PersistenceError.ts"
import { serveInProcess } from "../support/inProcessApi.ts"

const samples: ReadonlyArray<DomainError> = DomainErrors.map((errorClass) =>
  new errorClass({ message: `a ${errorClass.tag}`, details: { sample: true }, suggestion: "try again" })
)

// One endpoint per domain error, declaring it (built in a loop, so typed loosely).
let Group: any = HttpApiGroup.make("errors")
  .add(HttpApiEndpoint.get("persistence", "/persistence", { success: Schema.String, error: serverErrors }))
for (const errorClass of DomainErrors) {
  Group = Group.add(HttpApiEndpoint.get(errorClass.tag, `/${errorClass.tag}`, {
    success: Schema.String,
    error: [declared(errorClass), ...serverErrors]
  }))
}
const TestApi = HttpApi.make("test").add(Group as HttpApiGroup.Top)

const Handlers = HttpApiBuilder.group(TestApi as any, "errors", (handlers: any) => {
  let built: any = handlers
  for (const sample of samples) built = built.handle(sample._tag, () => rendered(Effect.fail(sample)))
  return built.handle("persistence", () => rendered(Effect.fail(new PersistenceError({ cause: new Error("connection terminated") }))))
})

const call = serveInProcess(TestApi, Handlers)

describe("declared domain errors", () => {
  it.each(DomainErrors.map((errorClass, index) => [errorClass.tag, errorClass, samples[index]!] as const))(
    "%s answers its status and code in the envelope",
    async (_tag, errorClass, sample) => {
      const { response, body } = await call(`/${errorClass.tag}`)
      expect(response.status).toBe(errorClass.status)
      const envelope = Schema.decodeUnknownSync(ErrorEnvelope)(body)
      expect(envelope.error).toEqual({
        code: errorClass.code,
        message: sample.message,
        statusCode: errorClass.status,
        requestId: response.headers.get("x-request-id"),
        details: { sample: true },
        suggestion: "try again"
      })
      expect(envelope.error.requestId).toMatch(/^req_/)
      expect(Date.parse(envelope.timestamp)).not.toBeNaN()
    }
  )

  it("decodes the envelope back into the error (what the web client sees)", () => {
    const codec = declared(DuplicateEmail)
    const decoded = Schema.decodeUnknownSync(codec)({
      success: false,
      error: { code: "CONTACT_EXISTS", message: "taken", statusCode: 409, requestId: "req_x" },
      timestamp: new Date().toISOString()
    })
    expect(decoded).toBeInstanceOf(DuplicateEmail)
    expect(decoded.message).toBe("taken")
    // Another 409's envelope is not this error.
    expect(() =>
      Schema.decodeUnknownSync(codec)({
        success: false,
        error: { code: "DOMAIN_EXISTS", message: "x", statusCode: 409, requestId: "req_x" },
        timestamp: new Date().toISOString()
      })
    ).toThrow()
  })

  it("a PersistenceError is the 500 envelope, its cause not shown", async () => {
    const { response, body } = await call("/persistence")
    expect(response.status).toBe(500)
    const envelope = Schema.decodeUnknownSync(ErrorEnvelope)(body)
    expect(envelope.error.code).toBe("INTERNAL_SERVER_ERROR")
    expect(envelope.error.requestId).toBe(response.headers.get("x-request-id"))
    expect(JSON.stringify(body)).not.toContain("connection terminated")
  })

  it("every domain error is declared by an endpoint of the contract and listed in /openapi.json", () => {
    const document = OpenApi.fromApi(Api)
    const schemas = Object.keys(document.components.schemas)
    for (const errorClass of DomainErrors) expect(schemas).toContain(errorClass.tag)
  })
})
