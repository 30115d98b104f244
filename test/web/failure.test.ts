/**
 * The web app's API calls (web/src/api/client.ts) against a real HTTP server answering what servers and
 * proxies answer: every failure arrives as one ApiFailure with message, code, status and request id.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Schema } from "effect"
import { HttpApiEndpoint } from "effect/http-api"
import { Api } from "../../src/http/api/Api.ts"
import { issueToFieldErrors } from "../../src/http/api/fieldErrors.ts"
import { ApiFailure, makeCallApi } from "../../web/src/api/client.ts"
import { fieldError, shownAtFields } from "../../web/src/api/fieldErrors.ts"
import { retryUnlessClientError } from "../../web/src/api/hooks.ts"

const PROJECT = "0190a5c4-7d2e-7b1a-9f3e-2c4d5e6f7a8b"
const CONTACT = {
  id: "c1",
  email: "a@example.com",
  subscribed: true,
  snoozedUntil: null,
  data: {},
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z"
}

const envelope = (status: number, code: string, message: string, requestId: string) => ({
  success: false,
  error: { code, message, statusCode: status, requestId },
  timestamp: "2026-01-01T00:00:00.000Z"
})

/** What the server answers, per request path; the last request's headers are kept, and every request's path. */
const answers = new Map<string, (response: ServerResponse) => void>()
let lastHeaders: IncomingMessage["headers"] = {}
const received: Array<string> = []
const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (response: ServerResponse) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

let server: Server
let callApi: ReturnType<typeof makeCallApi>
beforeAll(async () => {
  server = createServer((request, response) => {
    lastHeaders = request.headers
    received.push(`${request.method} ${request.url}`)
    request.resume()
    const answer = answers.get(`${request.method} ${request.url!.split("?")[0]}`)
    if (answer) answer(response)
    else json(500, { unexpected: request.url })(response)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  callApi = makeCallApi(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const failureOf = async (promise: Promise<unknown>): Promise<ApiFailure> => {
  const error = await promise.then(() => undefined, (error: unknown) => error)
  expect(error).toBeInstanceOf(ApiFailure)
  return error as ApiFailure
}

const fields = (failure: ApiFailure) => ({
  message: failure.message,
  code: failure.code,
  status: failure.status,
  requestId: failure.requestId
})

describe("callApi", () => {
  it("resolves with the decoded success and sends the project id as X-Project-Id inside a project", async () => {
    answers.set("GET /contacts/c1", json(200, CONTACT))
    expect(await callApi(PROJECT, (client) => client.contacts.get({ params: { id: "c1" } }))).toEqual(CONTACT)
    expect(lastHeaders["x-project-id"]).toBe(PROJECT)
    expect(lastHeaders.authorization).toBeUndefined()
    await callApi(undefined, (client) => client.contacts.get({ params: { id: "c1" } }))
    expect(lastHeaders["x-project-id"]).toBeUndefined()
  })

  it("turns a declared envelope into its message, code, status and request id", async () => {
    answers.set("GET /contacts/c2", json(404, envelope(404, "NOT_FOUND", "Contact not found", "req_404")))
    expect(fields(await failureOf(callApi(PROJECT, (client) => client.contacts.get({ params: { id: "c2" } }))))).toEqual({
      message: "Contact not found",
      code: "NOT_FOUND",
      status: 404,
      requestId: "req_404"
    })
    answers.set("GET /contacts/c3", json(401, envelope(401, "INVALID_API_KEY", "Missing API key", "req_401")))
    const unauthorized = await failureOf(callApi(PROJECT, (client) => client.contacts.get({ params: { id: "c3" } })))
    expect(fields(unauthorized)).toEqual({ message: "Missing API key", code: "INVALID_API_KEY", status: 401, requestId: "req_401" })
    expect(unauthorized.isClientError).toBe(true)
  })

  it("turns a declared typed error (decoded from its envelope) into its message, code, status and request id", async () => {
    answers.set(
      "GET /contacts",
      json(400, envelope(400, "INVALID_CURSOR", "cursor is not a cursor returned by this list", "req_400"), { "x-request-id": "req_400" })
    )
    expect(fields(await failureOf(callApi(PROJECT, (client) => client.contacts.list({ query: { cursor: "forged" } }))))).toEqual({
      message: "cursor is not a cursor returned by this list",
      code: "INVALID_CURSOR",
      status: 400,
      requestId: "req_400"
    })
    answers.set(
      "PATCH /contacts/c4",
      json(409, envelope(409, "CONTACT_EXISTS", "Another contact in this project already has this email", "req_409"), {
        "x-request-id": "req_409"
      })
    )
    const conflict = await failureOf(
      callApi(PROJECT, (client) => client.contacts.update({ params: { id: "c4" }, payload: { email: "b@example.com" } }))
    )
    expect(fields(conflict)).toEqual({
      message: "Another contact in this project already has this email",
      code: "CONTACT_EXISTS",
      status: 409,
      requestId: "req_409"
    })
  })

  it("turns the flat { error } 400 into a failure carrying the x-request-id header", async () => {
    answers.set("POST /contacts", json(400, { error: "email is required" }, { "x-request-id": "req_legacy" }))
    expect(fields(await failureOf(callApi(PROJECT, (client) => client.contacts.upsert({ payload: {} }))))).toEqual({
      message: "email is required",
      code: "BAD_REQUEST",
      status: 400,
      requestId: "req_legacy"
    })
  })

  it("reads a status the endpoint does not declare: its envelope if it has one, else the status and x-request-id", async () => {
    // GET /healthz declares only 500; a 404 envelope and a proxy's HTML 502 are both undeclared.
    answers.set("GET /healthz", json(404, envelope(404, "NOT_FOUND", "No route for GET /healthz", "req_undeclared")))
    expect(fields(await failureOf(callApi(undefined, (client) => client.healthz({}))))).toEqual({
      message: "No route for GET /healthz",
      code: "NOT_FOUND",
      status: 404,
      requestId: "req_undeclared"
    })
    answers.set("GET /healthz", (response) => {
      response.writeHead(502, { "content-type": "text/html", "x-request-id": "req_proxy" })
      response.end("<h1>Bad gateway</h1>")
    })
    const proxy = await failureOf(callApi(undefined, (client) => client.healthz({})))
    expect(fields(proxy)).toEqual({
      message: "The server answered 502: try again in a moment",
      code: "SERVER_ERROR",
      status: 502,
      requestId: "req_proxy"
    })
    expect(proxy.isClientError).toBe(false)
  })

  it("reports a declared status whose body is not the envelope by its status and request id", async () => {
    answers.set("GET /contacts/c4", (response) => {
      response.writeHead(404, { "content-type": "text/plain", "x-request-id": "req_plain" })
      response.end("not found")
    })
    expect(fields(await failureOf(callApi(PROJECT, (client) => client.contacts.get({ params: { id: "c4" } }))))).toEqual({
      message: "The server answered 404",
      code: "UNEXPECTED_RESPONSE",
      status: 404,
      requestId: "req_plain"
    })
  })

  it("reports a success that does not match the contract as a contract mismatch, which a reload may cure", async () => {
    answers.set("GET /contacts/c5", json(200, { id: 5 }, { "x-request-id": "req_mismatch" }))
    const mismatch = await failureOf(callApi(PROJECT, (client) => client.contacts.get({ params: { id: "c5" } })))
    expect(fields(mismatch)).toMatchObject({ code: "CONTRACT_MISMATCH", status: 200, requestId: "req_mismatch" })
    expect(mismatch.message).toMatch(/Reload the page/)
    expect(mismatch.local).toBe(false)
  })

  /** The field errors the server's gateway answers for this payload (it decodes it with the same schema). */
  const serverFieldErrors = (group: keyof typeof Api.groups, endpoint: string, payload: unknown) => {
    const schema =
      (Api.groups[group].endpoints as Record<string, { readonly payload: HttpApiEndpoint.PayloadMap }>)[endpoint]!.payload.values().next()
        .value!.schemas[0]
    const decoded = Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>)(payload)
    if (decoded._tag === "Success") throw new Error("the payload decoded")
    const error = decoded.cause.reasons[0]! as unknown as { error: Schema.SchemaError }
    return issueToFieldErrors(error.error.issue).map(({ field, message, code }) => ({ field, message, code }))
  }

  it("refuses a request the contract's schemas refuse before sending it, naming the field as the server would", async () => {
    const before = received.length
    const contact = await failureOf(
      callApi(PROJECT, (client) => client.contacts.upsert({ payload: { email: "bob@bar", subscribed: true } }))
    )
    const invite = await failureOf(
      callApi(PROJECT, (client) => client.accounts.addMember({ params: { id: PROJECT }, payload: { email: "x@y", role: "MEMBER" } }))
    )
    expect(received.length, "nothing reached the server").toBe(before)

    expect(contact.fieldErrors).toEqual(serverFieldErrors("contacts", "upsert", { email: "bob@bar", subscribed: true }))
    expect(invite.fieldErrors).toEqual(serverFieldErrors("accounts", "addMember", { email: "x@y", role: "MEMBER" }))
    for (const failure of [contact, invite]) {
      expect(fields(failure)).toEqual({
        message: "Expected a valid email address (at most 254 characters)",
        code: "VALIDATION_ERROR",
        status: 422,
        requestId: null
      })
      expect(failure.fieldErrors.map((error) => error.field)).toEqual(["email"])
      expect(failure.local).toBe(true)
      expect(failure.isClientError).toBe(true)
      expect(failure.message).not.toMatch(/reload/i)
    }
  })

  it("keeps a 422's field errors and a 403's details (the unverified sender domain)", async () => {
    answers.set(
      "POST /domains",
      json(422, {
        ...envelope(422, "VALIDATION_ERROR", "Request validation failed", "req_422"),
        error: {
          ...envelope(422, "VALIDATION_ERROR", "Request validation failed", "req_422").error,
          errors: [{
            field: "domain",
            message: "Expected a domain name such as example.com",
            code: "invalid_string",
            received: "not a domain"
          }]
        }
      })
    )
    const invalid = await failureOf(callApi(PROJECT, (client) => client.domains.create({ payload: { domain: "not a domain" } })))
    expect(invalid.fieldErrors).toEqual([{
      field: "domain",
      message: "Expected a domain name such as example.com",
      code: "invalid_string"
    }])
    expect(invalid.local).toBe(false)

    const unverified = envelope(403, "INTERNAL_SERVER_ERROR", "The domain acme.test is not verified for this project", "req_403")
    answers.set("POST /templates", json(403, { ...unverified, error: { ...unverified.error, details: { domain: "acme.test" } } }))
    const forbidden = await failureOf(
      callApi(PROJECT, (client) => client.templates.create({ payload: { name: "t", subject: "s", body: "b", from: "a@acme.test" } }))
    )
    expect(fields(forbidden)).toEqual({
      message: "The domain acme.test is not verified for this project",
      code: "INTERNAL_SERVER_ERROR",
      status: 403,
      requestId: "req_403"
    })
    expect(forbidden.details).toEqual({ domain: "acme.test" })
  })

  it("reports an unreachable server as a network error", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const failure = await failureOf(
      makeCallApi(`http://127.0.0.1:${port}`)(PROJECT, (client) => client.contacts.get({ params: { id: "c1" } }))
    )
    expect(fields(failure)).toEqual({
      message: "Could not reach the server. Check your connection and try again.",
      code: "NETWORK_ERROR",
      status: 0,
      requestId: null
    })
  })
})

describe("field errors", () => {
  const failure = new ApiFailure({
    message: "Request validation failed",
    code: "VALIDATION_ERROR",
    status: 422,
    requestId: "req",
    fieldErrors: [
      { field: "body", message: "Unclosed tag", code: "invalid_template" },
      { field: "data.plan", message: "Too long", code: "too_big" },
      { field: "data.seats", message: "Not a number", code: "invalid_type" }
    ]
  })

  it("are found at the field they name or inside it, never at a field whose name only starts the same", () => {
    expect(fieldError(failure, "body")).toBe("Unclosed tag")
    expect(fieldError(failure, "data")).toBe("Too long; Not a number")
    expect(fieldError(failure, "bod")).toBeUndefined()
    expect(fieldError(failure, "subject")).toBeUndefined()
    expect(fieldError(null, "body")).toBeUndefined()
  })

  it("need no message of their own only when the form shows every one of them", () => {
    expect(shownAtFields(failure, ["body", "data"])).toBe(true)
    expect(shownAtFields(failure, ["body"])).toBe(false)
    expect(shownAtFields(new ApiFailure({ message: "Not found", code: "NOT_FOUND", status: 404, requestId: null }), ["body"])).toBe(false)
  })
})

describe("retries", () => {
  const failure = (status: number) => new ApiFailure({ message: "", code: "", status, requestId: null })

  it("never repeat a 4xx, and repeat other failures twice", () => {
    expect(retryUnlessClientError(0, failure(404))).toBe(false)
    expect(retryUnlessClientError(0, failure(401))).toBe(false)
    expect(retryUnlessClientError(0, failure(500))).toBe(true)
    expect(retryUnlessClientError(0, failure(0))).toBe(true)
    expect(retryUnlessClientError(2, failure(503))).toBe(false)
  })
})
