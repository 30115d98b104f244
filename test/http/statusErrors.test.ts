/**
 * The status errors (src/http/api/statusErrors.ts) reach clients as the spec's error envelope through
 * the one codec: each, failed by a handler of an endpoint that declares its status, answers that status
 * with its own code, fields and headers (Retry-After, Allow); the legacy 400 is the flat `{ error }`.
 * In the real contract the middleware declares what it refuses with, so /openapi.json lists it on every
 * operation behind it, and operations list the statuses their handlers answer.
 */
import { Effect, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { Api } from "../../src/http/api/Api.ts"
import { ErrorDocs, ErrorEnvelope, serverErrors } from "../../src/http/api/errors.ts"
import {
  BadGateway,
  BadRequest,
  Conflict,
  Forbidden,
  InternalError,
  LegacyError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  StatusErrors,
  Unauthorized,
  UnsupportedMediaType,
  ValidationFailed
} from "../../src/http/api/statusErrors.ts"
import { rendered } from "../../src/http/errors.ts"
import { serveInProcess } from "../support/inProcessApi.ts"

/** Each status error's codec, as endpoints declare it. */
const docsByStatus = new Map<number, Schema.Top>([
  [BadRequest.status, ErrorDocs.badRequest],
  [Unauthorized.status, ErrorDocs.unauthorized],
  [Forbidden.status, ErrorDocs.forbidden],
  [NotFound.status, ErrorDocs.notFound],
  [MethodNotAllowed.status, ErrorDocs.methodNotAllowed],
  [Conflict.status, ErrorDocs.conflict],
  [PayloadTooLarge.status, ErrorDocs.payloadTooLarge],
  [UnsupportedMediaType.status, ErrorDocs.unsupportedMediaType],
  [ValidationFailed.status, ErrorDocs.validation],
  [RateLimited.status, ErrorDocs.rateLimited],
  [InternalError.status, ErrorDocs.internal],
  [BadGateway.status, ErrorDocs.badGateway],
  [ServiceUnavailable.status, ErrorDocs.unavailable]
])

const samples = StatusErrors.map((errorClass) =>
  new errorClass({
    code: `SAMPLE_${errorClass.status}`,
    message: `a ${errorClass.status}`,
    errors: [{ field: "name", message: "bad", code: "invalid" }],
    details: { sample: true },
    suggestion: "try again",
    headers: { "retry-after": "7" }
  })
)

// One endpoint per status error, declaring its status's codec (built in a loop, so typed loosely).
let Group: any = HttpApiGroup.make("errors")
  .add(HttpApiEndpoint.get("legacy", "/legacy", { success: Schema.String, error: [ErrorDocs.legacy, ...serverErrors] }))
  .add(HttpApiEndpoint.get("undefinedValues", "/undefined-values", { success: Schema.String, error: [ErrorDocs.validation] }))
for (const errorClass of StatusErrors) {
  Group = Group.add(HttpApiEndpoint.get(`s${errorClass.status}`, `/${errorClass.status}`, {
    success: Schema.String,
    error: [docsByStatus.get(errorClass.status)!]
  }))
}
const TestApi = HttpApi.make("test").add(Group as HttpApiGroup.Top)

const Handlers = HttpApiBuilder.group(TestApi as any, "errors", (handlers: any) => {
  let built: any = handlers
  StatusErrors.forEach((errorClass, index) => {
    built = built.handle(`s${errorClass.status}`, () => rendered(Effect.fail(samples[index]!)))
  })
  return built
    .handle("legacy", () => Effect.fail(new LegacyError({ message: "Email is required" })))
    .handle("undefinedValues", () =>
      Effect.fail(
        new ValidationFailed({
          code: "VALIDATION_ERROR",
          message: "Request validation failed",
          errors: [{ field: "to", message: "required", code: "invalid_range", received: undefined }],
          details: { limit: 10, gone: undefined },
          suggestion: undefined
        })
      ))
})

const call = serveInProcess(TestApi, Handlers)

describe("status errors", () => {
  it("every status error class has its own status and its codec in ErrorDocs", () => {
    expect(docsByStatus.size).toBe(StatusErrors.length)
    for (const errorClass of StatusErrors) expect(docsByStatus.has(errorClass.status), String(errorClass.status)).toBe(true)
  })

  // Not 415: the gateway answers every 415 with its own UNSUPPORTED_MEDIA_TYPE body (gateway.ts).
  it.each(
    StatusErrors.flatMap((errorClass, index) => errorClass.status === 415 ? [] : [[errorClass.status, samples[index]!] as const])
  )(
    "%s answers its status, its code and fields in the envelope, and its headers",
    async (status, sample) => {
      const { response, body } = await call(`/${status}`)
      expect(response.status).toBe(status)
      expect(response.headers.get("retry-after")).toBe("7")
      const envelope = Schema.decodeUnknownSync(ErrorEnvelope)(body)
      expect(envelope.error).toEqual({
        code: sample.code,
        message: sample.message,
        statusCode: status,
        requestId: response.headers.get("x-request-id"),
        errors: [{ field: "name", message: "bad", code: "invalid" }],
        details: { sample: true },
        suggestion: "try again"
      })
      // The headers go on the response, not in the body.
      expect(JSON.stringify(body)).not.toContain("retry-after")
    }
  )

  it("the legacy 400 is the flat { error }", async () => {
    const { response, body } = await call("/legacy")
    expect(response.status).toBe(400)
    expect(body).toEqual({ error: "Email is required" })
  })

  it("writes undefined values as JSON.stringify does: left out (a field, a field error's value, a detail)", async () => {
    const { response, body } = await call("/undefined-values")
    expect(response.status).toBe(422)
    const { error } = body as { error: Record<string, unknown> }
    expect(error.errors).toEqual([{ field: "to", message: "required", code: "invalid_range" }])
    expect(error.details).toEqual({ limit: 10 })
    expect(Object.keys(error)).not.toContain("suggestion")
  })

  it("decodes an envelope back into the error of its status, whatever its code", () => {
    const decoded = Schema.decodeUnknownSync(ErrorDocs.notFound)({
      success: false,
      error: { code: "NOT_FOUND", message: "Contact not found", statusCode: 404, requestId: "req_x" },
      timestamp: new Date().toISOString()
    })
    expect(decoded).toBeInstanceOf(NotFound)
    expect(decoded.code).toBe("NOT_FOUND")
    expect(
      Schema.decodeUnknownSync(ErrorDocs.unavailable)({
        success: false,
        error: { code: "SERVICE_UNAVAILABLE", message: "later", statusCode: 503, requestId: "req_x" },
        timestamp: new Date().toISOString()
      })
    ).toBeInstanceOf(ServiceUnavailable)
  })

  describe("in /openapi.json", () => {
    const document = OpenApi.fromApi(Api)
    const responses = (method: string, path: string) => Object.keys(document.paths[path]![method as "get"]!.responses)

    it("every operation behind the API key lists what the key check refuses with", () => {
      for (const [path, item] of Object.entries(document.paths)) {
        for (const [method, operation] of Object.entries(item as Record<string, { security?: Array<object> }>)) {
          const keyed = operation.security?.some((requirement) => "secretKey" in requirement || "publicKey" in requirement)
          if (!keyed) continue
          expect(responses(method, path), `${method} ${path}`).toEqual(expect.arrayContaining(["401", "403", "429", "503"]))
        }
      }
    })

    it("lists the statuses handlers answer beyond the common ones", () => {
      expect(responses("post", "/projects/{id}/members")).toContain("409")
      expect(responses("patch", "/projects/{id}/members/{userId}")).toContain("409")
      expect(responses("post", "/users/@me/projects/{id}/billing-portal")).toEqual(expect.arrayContaining(["409", "502"]))
      expect(responses("get", "/auth/oauth/{provider}")).toContain("502")
    })
  })
})
