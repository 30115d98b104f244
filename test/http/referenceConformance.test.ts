/**
 * Drop-in conformance with the reference platform's published API (its OpenAPI document, the contract
 * its SDKs and users code against): the 15 operations it documents, replayed against this service with
 * the reference's own request examples, answering the statuses it documents with bodies of the shapes
 * it documents. The expectations are written here, as JSON Schemas checked with ajv; the reference
 * document itself is not ours and is not copied. Where we answer differently on purpose, the test says
 * so and docs/api-notes.md ("Compatibility with the reference platform") says why.
 */
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { beforeAll, describe, expect, it } from "vitest"
import { type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request, type TestProject } from "../support/stack.ts"

// ---- the reference's shapes, as JSON Schema (2020-12) ----

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: "null" }] })
const string = { type: "string" }
const dateTime = { type: "string", format: "date-time" }
const email = { type: "string", format: "email" }
const integer = { type: "integer" }
const boolean = { type: "boolean" }
const object = (properties: Record<string, unknown>, required: ReadonlyArray<string> = Object.keys(properties)) => ({
  type: "object",
  properties,
  required
})

const FieldError = object({ field: string, message: string, code: string, received: {} }, ["field", "message", "code"])
const ErrorEnvelope = object({
  success: { const: false },
  error: object({
    code: string,
    message: string,
    statusCode: integer,
    requestId: string,
    errors: { type: "array", items: FieldError },
    details: { type: "object" },
    suggestion: string
  }, ["code", "message", "statusCode", "requestId"]),
  timestamp: dateTime
})
/** The flat 400 of the hand-validated create endpoints (POST /contacts, /templates, /segments). */
const LegacyError = { ...object({ error: string }), additionalProperties: false }

const Filter = object({
  field: string,
  operator: {
    enum: [
      "equals",
      "notEquals",
      "contains",
      "notContains",
      "greaterThan",
      "lessThan",
      "greaterThanOrEqual",
      "lessThanOrEqual",
      "exists",
      "notExists",
      "within",
      "olderThan",
      "triggered",
      "triggeredWithin",
      "triggeredOlderThan",
      "notTriggered",
      "notTriggeredWithin",
      "memberOfSegment",
      "notMemberOfSegment"
    ]
  },
  value: {},
  unit: { enum: ["days", "hours", "minutes"] }
}, ["field", "operator"])
const FilterCondition = {
  $id: "FilterCondition",
  ...object({
    logic: { enum: ["AND", "OR"] },
    groups: {
      type: "array",
      minItems: 1,
      items: object({ filters: { type: "array", items: Filter }, conditions: { $ref: "FilterCondition" } }, ["filters"])
    }
  })
}

const Contact = object({ id: string, email, subscribed: boolean, data: { type: "object" }, createdAt: dateTime, updatedAt: dateTime })
const ContactWithMeta = { allOf: [Contact, object({ _meta: object({ isNew: boolean, isUpdate: boolean }) })] }
const mailContent = {
  name: string,
  description: nullable(string),
  subject: string,
  body: string,
  from: email,
  fromName: nullable(string),
  replyTo: nullable(email),
  type: { enum: ["TRANSACTIONAL", "MARKETING", "HEADLESS"] }
}
const Template = object({ id: string, ...mailContent, projectId: string, createdAt: dateTime, updatedAt: dateTime })
const Campaign = object({
  id: string,
  ...mailContent,
  status: { enum: ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"] },
  audienceType: { enum: ["ALL", "SEGMENT", "FILTERED"] },
  audienceCondition: nullable({ $ref: "FilterCondition" }),
  segmentId: nullable(string),
  scheduledFor: nullable(dateTime),
  totalRecipients: integer,
  sentCount: integer,
  deliveredCount: integer,
  openedCount: integer,
  clickedCount: integer,
  bouncedCount: integer,
  projectId: string,
  sentAt: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime
})
const Segment = object({
  id: string,
  name: string,
  description: nullable(string),
  type: { enum: ["DYNAMIC", "STATIC"] },
  condition: nullable({ $ref: "FilterCondition" }),
  trackMembership: boolean,
  memberCount: integer,
  projectId: string,
  createdAt: dateTime,
  updatedAt: dateTime
})
const page = (item: unknown) =>
  object({ data: { type: "array", items: item }, total: integer, page: integer, pageSize: integer, totalPages: integer })

const SendSuccess = object({
  success: boolean,
  data: object({
    emails: { type: "array", minItems: 1, items: object({ contact: object({ id: string, email: string }), email: string }) },
    timestamp: dateTime
  })
})
const TrackSuccess = object({ success: boolean, data: object({ contact: string, event: string, timestamp: dateTime }) })
const VerifySuccess = object({
  success: boolean,
  data: object({
    email,
    valid: boolean,
    isDisposable: boolean,
    isAlias: boolean,
    isTypo: boolean,
    isPlusAddressed: boolean,
    isPersonalEmail: boolean,
    domainExists: boolean,
    hasWebsite: boolean,
    hasMxRecords: boolean,
    suggestedEmail: nullable(email),
    reasons: { type: "array", items: string }
  }, [
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
  ])
})
const ContactList = object({ data: { type: "array", items: Contact }, cursor: nullable(string), hasMore: boolean, total: integer })
const CampaignCreated = object({ success: boolean, data: Campaign })
const CampaignSent = object({
  success: boolean,
  data: object({ id: string, name: string, status: Campaign.properties.status, scheduledFor: nullable(dateTime) }),
  message: string
})

const ajv = new Ajv2020({ allErrors: true, strict: true })
addFormats.default(ajv)
ajv.addSchema(FilterCondition)

/** The status, and the body against the shape the reference documents for it. */
const conforms = (response: Awaited<ReturnType<typeof request>>, status: number, schema?: object) => {
  expect(response.status, response.text.slice(0, 500)).toBe(status)
  if (schema === undefined) {
    expect(response.text).toBe("")
    return response.json
  }
  const validate = ajv.compile(schema)
  expect(validate(response.json) ? [] : validate.errors, response.text.slice(0, 500)).toEqual([])
  if (schema === ErrorEnvelope) expect(response.json.error.statusCode).toBe(status)
  return response.json
}

// ---- the reference's request examples ----

/** The id the reference's examples use for a template and for a segment alike. */
const EXAMPLE_ID = "9c4d5e1f-2a3b-4c5d-8e9f-0a1b2c3d4e5f"

const sendExamples: Record<string, Record<string, unknown>> = {
  simple: {
    to: "user@example.com",
    subject: "Password Reset Request",
    body: "<h1>Reset Your Password</h1><p>Click the link to reset: {{resetLink}}</p>",
    data: { resetLink: "https://example.com/reset/abc123" }
  },
  withNames: {
    to: { name: "Jane Doe", email: "jane@example.com" },
    from: { name: "My Company", email: "hello@mycompany.com" },
    subject: "Welcome to Our Service",
    body: "<h1>Welcome {{name}}!</h1><p>We're glad to have you.</p>",
    data: { name: "Jane" }
  },
  multipleRecipients: {
    to: [{ name: "Jane Doe", email: "jane@example.com" }, { name: "John Smith", email: "john@example.com" }],
    from: { name: "Newsletter", email: "news@mycompany.com" },
    subject: "Monthly Update",
    body: "<h1>Hello {{name}}!</h1>"
  },
  withTemplate: {
    to: "user@example.com",
    template: EXAMPLE_ID,
    data: { firstName: "John", lastName: "Doe", resetCode: { value: "ABC123", persistent: false } }
  },
  withTemplateOverride: { to: "user@example.com", template: EXAMPLE_ID, subject: "Custom Subject Override", data: { firstName: "Jane" } },
  marketingEmail: { to: "user@example.com", subject: "Weekly Newsletter", body: "<h1>This Week's Updates</h1>", subscribed: true },
  withAttachment: {
    to: "user@example.com",
    subject: "Your Invoice",
    body: "<h1>Invoice Attached</h1><p>Please find your invoice attached.</p>",
    // The reference's example elides the content ("JVBERi0xLjQKJeLjz9MKMSAwIG9iago8PC9UeXBlL..."); a whole base64 value stands in.
    attachments: [{
      filename: "invoice.pdf",
      content: Buffer.from("%PDF-1.4\n%âãÏÓ\n1 0 obj\n<</Type/Catalog>>\nendobj\n").toString("base64"),
      contentType: "application/pdf"
    }]
  }
}
/** The examples with neither `from` nor a template: the reference's own description says `from` is then required. */
const WITHOUT_SENDER = ["simple", "marketingEmail", "withAttachment"]

const trackExample = { email: "user@example.com", event: "purchase", data: { product: "Premium Plan", amount: 99 } }
const verifyExamples = {
  validEmail: { email: "user@gmail.com" },
  typoEmail: { email: "user@gmial.com" },
  disposableEmail: { email: "user@tempmail.com" }
}
const contactExample = { email: "user@example.com", subscribed: true, data: { firstName: "John", lastName: "Doe", plan: "premium" } }
const templateExample = {
  name: "Password reset",
  subject: "Reset your password",
  body: "<h1>Hi {{firstName}}</h1><p>Use this code: {{resetCode}}</p>",
  from: "hello@example.com",
  fromName: "My App",
  type: "TRANSACTIONAL"
}
const campaignExamples: Record<string, Record<string, unknown>> = {
  allContacts: {
    name: "March newsletter",
    subject: "What shipped in March",
    body: "<h1>Hello {{firstName}}</h1>",
    from: "news@example.com",
    fromName: "Example",
    audienceType: "ALL"
  },
  segment: {
    name: "Premium announcement",
    subject: "A new perk for premium users",
    body: "<h1>Hello {{firstName}}</h1>",
    from: "news@example.com",
    audienceType: "SEGMENT",
    segmentId: EXAMPLE_ID
  },
  filtered: {
    name: "New premium onboarding",
    subject: "Getting started",
    body: "<h1>Welcome {{firstName}}</h1>",
    from: "news@example.com",
    audienceType: "FILTERED",
    audienceCondition: {
      logic: "AND",
      groups: [{
        filters: [{ field: "data.plan", operator: "equals", value: "premium" }, {
          field: "createdAt",
          operator: "within",
          value: 30,
          unit: "days"
        }]
      }]
    }
  }
}
const sendCampaignExamples = { immediate: {}, scheduled: { scheduledFor: "2025-02-01T09:00:00.000Z" } }
const segmentExamples: Record<string, Record<string, unknown>> = {
  simple: {
    name: "Premium Users",
    condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "premium" }] }] },
    trackMembership: true
  },
  orLogic: {
    name: "Premium or new",
    description: "Targets for the onboarding push",
    condition: {
      logic: "OR",
      groups: [
        {
          filters: [{ field: "data.plan", operator: "equals", value: "premium" }, { field: "subscribed", operator: "equals", value: true }]
        },
        { filters: [{ field: "createdAt", operator: "within", value: 7, unit: "days" }] }
      ]
    }
  },
  eventBased: {
    name: "Recent purchasers",
    condition: { logic: "AND", groups: [{ filters: [{ field: "purchase", operator: "triggeredWithin", value: 30, unit: "days" }] }] }
  },
  static: { name: "Beta testers", type: "STATIC" }
}

// ---- the service ----

let context: MailContext
withMailStack((ready) => (context = ready))

const call = (method: string, path: string, body?: unknown, key?: string, headers?: Record<string, string>) =>
  request(context.api.url, method, path, { key: key ?? context.project.secretKey, body, ...(headers ? { headers } : {}) })
const secret = (method: string, path: string, body?: unknown) => call(method, path, body)
const withPublicKey = (method: string, path: string, body?: unknown) => call(method, path, body, context.project.publicKey)
const raw = (method: string, path: string, rawBody: string) =>
  request(context.api.url, method, path, { key: context.project.secretKey, rawBody })
const NO_SUCH_ID = "0190c3a4-0000-7000-8000-000000000000"

/** Ids the examples point at, replaced by real ones of this project. */
const real = { template: "", segment: "" }
const substitute = (body: Record<string, unknown>): Record<string, unknown> => ({
  ...body,
  ...(body.template === EXAMPLE_ID ? { template: real.template } : {}),
  ...(body.segmentId === EXAMPLE_ID ? { segmentId: real.segment } : {})
})

beforeAll(async () => {
  // The examples send from example.com and mycompany.com: the project has both verified.
  await verifyDomain(context, context.project.secretKey, "example.com")
  await verifyDomain(context, context.project.secretKey, "mycompany.com")
  real.template = conforms(await secret("POST", "/templates", templateExample), 201, Template).id
  real.segment = conforms(await secret("POST", "/segments", segmentExamples.simple), 201, Segment).id
})

describe("the reference's 15 operations", () => {
  it("POST /v1/send: 200 for its examples; 400, 401, 403, 404, 409 and 422 as documented", async () => {
    for (const [name, example] of Object.entries(sendExamples)) {
      const body = substitute(example)
      if (WITHOUT_SENDER.includes(name)) {
        // Difference (docs/api-notes.md): no `from` and no template is a 422 naming `from`; with a sender, the example goes out.
        const refused = conforms(await secret("POST", "/v1/send", body), 422, ErrorEnvelope)
        expect(refused.error.errors.map((e: { field: string }) => e.field), name).toContain("from")
        body.from = "hello@example.com"
      }
      conforms(await secret("POST", "/v1/send", body), 200, SendSuccess)
    }
    conforms(await raw("POST", "/v1/send", '{"to":'), 400, ErrorEnvelope)
    const simple = { ...sendExamples.simple, from: "hello@example.com" }
    conforms(await call("POST", "/v1/send", simple, undefined, { "Idempotency-Key": "x".repeat(256) }), 400, ErrorEnvelope)
    conforms(await withPublicKey("POST", "/v1/send", simple), 401, ErrorEnvelope)
    conforms(await secret("POST", "/v1/send", { ...sendExamples.withTemplate, template: NO_SUCH_ID }), 404, ErrorEnvelope)
    conforms(await call("POST", "/v1/send", simple, undefined, { "Idempotency-Key": "order-1234-receipt" }), 200, SendSuccess)
    const reused = conforms(
      await call("POST", "/v1/send", simple, undefined, { "Idempotency-Key": "order-1234-receipt" }),
      409,
      ErrorEnvelope
    )
    expect(reused.error).toMatchObject({
      code: "IDEMPOTENCY_KEY_REUSED",
      details: { key: "order-1234-receipt", originalRequest: "POST /v1/send", originalStatusCode: 200 }
    })
    conforms(await secret("POST", "/v1/send", { ...simple, to: "not-an-address" }), 422, ErrorEnvelope)
    // A disabled project cannot send.
    const disabled: TestProject = await context.stack.createProject("disabled")
    await context.stack.query("UPDATE projects SET disabled = true WHERE id = $1", [disabled.id])
    conforms(await call("POST", "/v1/send", simple, disabled.secretKey), 403, ErrorEnvelope)
  })

  it("POST /v1/track: 200 for its example; 401, 409 and 422 as documented; preserveExistingSubscription", async () => {
    conforms(await withPublicKey("POST", "/v1/track", trackExample), 200, TrackSuccess)
    // /v1/track takes the public key only: the secret key is a 401 there.
    conforms(await secret("POST", "/v1/track", trackExample), 401, ErrorEnvelope)
    const key = { "Idempotency-Key": "track-once" }
    conforms(await call("POST", "/v1/track", trackExample, context.project.publicKey, key), 200, TrackSuccess)
    conforms(await call("POST", "/v1/track", trackExample, context.project.publicKey, key), 409, ErrorEnvelope)
    const reserved = conforms(await withPublicKey("POST", "/v1/track", { ...trackExample, event: "email.open" }), 422, ErrorEnvelope)
    expect(reserved.error.errors[0]).toMatchObject({ field: "event", code: "reserved_event" })

    // preserveExistingSubscription: `subscribed` applies to a contact this request creates, and to no other.
    conforms(await secret("POST", "/contacts", { email: "optout@example.com", subscribed: false }), 201, ContactWithMeta)
    const kept = conforms(
      await withPublicKey("POST", "/v1/track", {
        email: "optout@example.com",
        event: "visit",
        subscribed: true,
        preserveExistingSubscription: true
      }),
      200,
      TrackSuccess
    )
    const fresh = conforms(
      await withPublicKey("POST", "/v1/track", {
        email: "doi@example.com",
        event: "signup",
        subscribed: false,
        preserveExistingSubscription: true
      }),
      200,
      TrackSuccess
    )
    // Each contact's event is applied by its own lane: wait for both before reading both contacts.
    await eventually(async () => {
      for (const [name, tracked] of [["visit", kept], ["signup", fresh]] as const) {
        const events = (await secret("GET", `/events?name=${name}`)).json.data.map((event: { id: string }) => event.id)
        expect(events).toContain(tracked.data.event)
      }
    })
    expect((await secret("GET", `/contacts/${kept.data.contact}`)).json.subscribed).toBe(false)
    expect((await secret("GET", `/contacts/${fresh.data.contact}`)).json.subscribed).toBe(false)
  })

  it("POST /v1/verify: 200 for its examples; 401 and 422 as documented", async () => {
    for (const example of Object.values(verifyExamples)) conforms(await secret("POST", "/v1/verify", example), 200, VerifySuccess)
    conforms(await withPublicKey("POST", "/v1/verify", verifyExamples.validEmail), 401, ErrorEnvelope)
    conforms(await secret("POST", "/v1/verify", {}), 422, ErrorEnvelope)
  })

  it("POST /contacts: 201 created, 200 updated, 400 LegacyError without email, 401", async () => {
    const created = conforms(await secret("POST", "/contacts", { ...contactExample, email: "john@example.net" }), 201, ContactWithMeta)
    expect(created._meta).toEqual({ isNew: true, isUpdate: false })
    const updated = conforms(await secret("POST", "/contacts", { ...contactExample, email: "john@example.net" }), 200, ContactWithMeta)
    expect(updated._meta).toEqual({ isNew: false, isUpdate: true })
    const { email: _, ...withoutEmail } = contactExample
    conforms(await secret("POST", "/contacts", withoutEmail), 400, LegacyError)
    conforms(await withPublicKey("POST", "/contacts", contactExample), 401, ErrorEnvelope)
  })

  it("GET /contacts: the cursor page with its query parameters; 401", async () => {
    const list = conforms(await secret("GET", "/contacts?limit=2&search=EXAMPLE&subscribed=true&sort=email&dir=asc"), 200, ContactList)
    expect(list.data.length).toBeLessThanOrEqual(2)
    if (list.hasMore) conforms(await secret("GET", `/contacts?limit=2&sort=email&dir=asc&cursor=${list.cursor}`), 200, ContactList)
    expect(conforms(await secret("GET", "/contacts?limit=1000"), 200, ContactList).data.length).toBeLessThanOrEqual(100)
    conforms(await withPublicKey("GET", "/contacts"), 401, ErrorEnvelope)
  })

  it("GET, PATCH and DELETE /contacts/{id}: 200, 200, 204; 401, 404, 409", async () => {
    const contact = conforms(await secret("POST", "/contacts", { email: "edit@example.net" }), 201, ContactWithMeta)
    conforms(await secret("GET", `/contacts/${contact.id}`), 200, Contact)
    conforms(await withPublicKey("GET", `/contacts/${contact.id}`), 401, ErrorEnvelope)
    conforms(await secret("GET", `/contacts/${NO_SUCH_ID}`), 404, ErrorEnvelope)
    const patched = conforms(await secret("PATCH", `/contacts/${contact.id}`, { subscribed: false, data: { plan: "pro" } }), 200, Contact)
    expect(patched).toMatchObject({ subscribed: false, data: { plan: "pro" } })
    conforms(await secret("PATCH", `/contacts/${contact.id}`, { email: "john@example.net" }), 409, ErrorEnvelope)
    conforms(await withPublicKey("PATCH", `/contacts/${contact.id}`, { subscribed: true }), 401, ErrorEnvelope)
    conforms(await secret("PATCH", `/contacts/${NO_SUCH_ID}`, { subscribed: true }), 404, ErrorEnvelope)
    conforms(await withPublicKey("DELETE", `/contacts/${contact.id}`), 401, ErrorEnvelope)
    conforms(await secret("DELETE", `/contacts/${contact.id}`), 204)
    conforms(await secret("DELETE", `/contacts/${contact.id}`), 404, ErrorEnvelope)
  })

  it("POST /templates: 201 for its example; 400 LegacyError for each required field; 401; 403 for an unverified domain", async () => {
    conforms(await secret("POST", "/templates", templateExample), 201, Template)
    for (const field of ["name", "subject", "body", "from"]) {
      const { [field as keyof typeof templateExample]: _, ...without } = templateExample
      conforms(await secret("POST", "/templates", without), 400, LegacyError)
    }
    conforms(await withPublicKey("POST", "/templates", templateExample), 401, ErrorEnvelope)
    const unverified = conforms(
      await secret("POST", "/templates", { ...templateExample, from: "hello@unverified.example" }),
      403,
      ErrorEnvelope
    )
    expect(unverified.error).toMatchObject({ code: "INTERNAL_SERVER_ERROR", message: expect.stringContaining("unverified.example") })
  })

  it("GET /templates: the page with its query parameters; 401", async () => {
    const list = conforms(
      await secret("GET", "/templates?page=1&pageSize=5&type=TRANSACTIONAL&search=reset&sort=name&dir=asc"),
      200,
      page(Template)
    )
    expect(list.data.length).toBeGreaterThan(0)
    conforms(await withPublicKey("GET", "/templates"), 401, ErrorEnvelope)
  })

  it("POST /campaigns: 201 for its examples; 400 without the audience's companion field; 401, 403, 422", async () => {
    for (const [name, example] of Object.entries(campaignExamples)) {
      const created = conforms(await secret("POST", "/campaigns", substitute(example)), 201, CampaignCreated)
      expect(created.data.status, name).toBe("DRAFT")
    }
    const { segmentId: _s, ...segmentWithoutId } = campaignExamples.segment!
    conforms(await secret("POST", "/campaigns", segmentWithoutId), 400, ErrorEnvelope)
    const { audienceCondition: _c, ...filteredWithoutCondition } = campaignExamples.filtered!
    conforms(await secret("POST", "/campaigns", filteredWithoutCondition), 400, ErrorEnvelope)
    conforms(await withPublicKey("POST", "/campaigns", campaignExamples.allContacts), 401, ErrorEnvelope)
    conforms(await secret("POST", "/campaigns", { ...campaignExamples.allContacts, from: "news@unverified.example" }), 403, ErrorEnvelope)
    const { name: _n, ...withoutName } = campaignExamples.allContacts!
    conforms(await secret("POST", "/campaigns", withoutName), 422, ErrorEnvelope)
  })

  it("GET /campaigns: the page with its query parameters; 400 for an unknown status; 401", async () => {
    conforms(await secret("GET", "/campaigns?page=1&pageSize=2&status=DRAFT&search=premium&sort=updatedAt&dir=desc"), 200, page(Campaign))
    conforms(await secret("GET", "/campaigns?status=PAUSED"), 400, ErrorEnvelope)
    conforms(await withPublicKey("GET", "/campaigns"), 401, ErrorEnvelope)
  })

  it("POST /campaigns/{id}/send: 200 for its examples; 400 unparseable date or not sendable; 401, 404, 422", async () => {
    // One reader: a campaign nobody would receive is a 400, as the reference refuses it (test/http/referenceGuards.test.ts).
    await secret("POST", "/contacts", { email: "reader@conformance.test", subscribed: true, data: { plan: "conformance-reader" } })
    const draft = async () =>
      conforms(
        await secret("POST", "/campaigns", {
          ...campaignExamples.filtered,
          audienceCondition: {
            logic: "AND",
            groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "conformance-reader" }] }]
          }
        }),
        201,
        CampaignCreated
      ).data.id as string
    for (const example of Object.values(sendCampaignExamples)) {
      const id = await draft()
      const sent = conforms(await secret("POST", `/campaigns/${id}/send`, example), 200, CampaignSent)
      expect(sent.data.id).toBe(id)
      // Sent (or sending) already: not in a sendable state.
      conforms(await secret("POST", `/campaigns/${id}/send`, example), 400, ErrorEnvelope)
    }
    const id = await draft()
    conforms(await secret("POST", `/campaigns/${id}/send`, { scheduledFor: "the second Tuesday" }), 400, ErrorEnvelope)
    conforms(await withPublicKey("POST", `/campaigns/${id}/send`, {}), 401, ErrorEnvelope)
    conforms(await secret("POST", `/campaigns/${NO_SUCH_ID}/send`, {}), 404, ErrorEnvelope)
    conforms(await secret("POST", "/campaigns/march-newsletter/send", {}), 422, ErrorEnvelope)
  })

  it("POST /segments: 201 for its examples (the bare event name too); 400 LegacyError without name or condition; 401", async () => {
    for (const [name, example] of Object.entries(segmentExamples)) {
      const created = conforms(await secret("POST", "/segments", example), 201, Segment)
      expect(created.type, name).toBe(name === "static" ? "STATIC" : "DYNAMIC")
    }
    const { name: _n, ...withoutName } = segmentExamples.simple!
    conforms(await secret("POST", "/segments", withoutName), 400, LegacyError)
    const missing = conforms(await secret("POST", "/segments", { name: "No condition" }), 400, LegacyError)
    expect(missing.error).toBe("Condition is required and must be an object for DYNAMIC segments")
    conforms(await withPublicKey("POST", "/segments", segmentExamples.simple), 401, ErrorEnvelope)
  })

  it("GET /segments: a bare array, newest first; 401", async () => {
    const list = conforms(await secret("GET", "/segments"), 200, { type: "array", items: Segment })
    const created = list.map((segment: { createdAt: string }) => segment.createdAt)
    expect(created).toEqual([...created].sort().reverse())
    conforms(await withPublicKey("GET", "/segments"), 401, ErrorEnvelope)
  })
})
