/**
 * Hostile input over every endpoint of the HttpApi contract, generated from its schemas.
 *
 * For each endpoint of `Api` (src/http/api/Api.ts) a valid-ish request is built from its params, query
 * and JSON payload schemas (fast-check), then one part of it is made hostile: strings with NUL or lone
 * UTF-16 surrogates, 1 MB values, nesting 5,000 levels deep, unknown and prototype keys (`__proto__`,
 * `constructor`), keys with NUL, wrong types, forged cursors, malformed percent-encodings in the URL.
 * A sweep over one complete sample per endpoint (every leaf, object, path parameter and query value)
 * makes sure the check does not depend on the luck of the draw. The project has a verified sending
 * domain, so templates, campaigns and sends get past their domain check to storage. The service must:
 * - never answer 5xx;
 * - answer only statuses its operation lists in /openapi.json;
 * - refuse in the spec's error envelope (`success:false`, `error.code`, `error.statusCode` = status,
 *   `error.requestId`), or the flat LegacyError `{ error }` 400 where the endpoint documents it (the pages behind
 *   links in mail answer HTML for people instead);
 * - never answer 2xx and then lose what it accepted: after a 2xx from /v1/track the event and the data
 *   it set are visible through the API (from /v1/track/batch: each event it did not list as rejected);
 *   after POST/PATCH /contacts the stored data has every key sent.
 *
 * Header values are not fuzzed: Node refuses NUL and control characters in headers before the app sees them.
 */
import fc from "fast-check"
import { type SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import { beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../src/http/api/Api.ts"
import { PublicKeyAuth } from "../../src/http/api/security.ts"
import { TrackBody } from "../../src/http/api/track.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

/** Random cases per endpoint, on top of the sweep. Bounded so the file stays well under a minute. */
const RUNS = 10
const SEED = Number(process.env.HOSTILE_SEED ?? Math.floor(Math.random() * 2 ** 31))

// ---- the endpoints, read from the contract ----

interface Endpoint {
  readonly group: string
  readonly name: string
  readonly method: string
  readonly path: string
  readonly params: SchemaAST.Objects | undefined
  readonly query: SchemaAST.Objects | undefined
  readonly body: SchemaAST.AST | undefined
  readonly publicKey: boolean
  /** The endpoint documents the reference's flat LegacyError `{ error }` 400. */
  readonly bare: boolean
  /** Pages and redirects for people following links in mail: they answer HTML (or a GIF), not JSON. */
  readonly page: boolean
}

const objectsOf = (schema: { readonly ast: SchemaAST.AST } | undefined): SchemaAST.Objects | undefined =>
  schema?.ast._tag === "Objects" ? schema.ast : undefined

const endpoints: Array<Endpoint> = []
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ group, endpoint, middleware }) => {
    const json = [...endpoint.payload.values()].find((payload) => payload.encoding._tag === "Json")
    endpoints.push({
      group: group.identifier,
      name: endpoint.identifier,
      method: endpoint.method,
      path: endpoint.path,
      params: objectsOf(endpoint.params),
      query: objectsOf(endpoint.query),
      body: json?.schemas[0].ast,
      publicKey: middleware.has(PublicKeyAuth as never),
      bare: [...endpoint.error].some((schema) => schema.ast.annotations?.identifier === "LegacyError"),
      page: group.identifier === "links"
    })
  }
})
// Destructive endpoints last, so the fixtures the others use still exist.
const fuzzed = endpoints
  .filter((endpoint) => endpoint.params || endpoint.query || endpoint.body)
  .sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"))

// ---- fixtures the valid-ish requests point at ----

let context: MailContext
const ids: Record<string, string> = {}
/** The statuses each operation documents, from the service's own /openapi.json ("POST /contacts/{id}" → statuses). */
const documented = new Map<string, Set<string>>()
const operationKey = (endpoint: Endpoint) => `${endpoint.method} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`

withMailStack((mail) => {
  context = mail
})

const call = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })

const created = async (method: string, path: string, body: unknown, key?: string) => {
  const response = await call(method, path, body, key)
  expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300)
  return response.json
}

beforeAll(async () => {
  const openapi: any = await fetch(`${context.api.url}/openapi.json`).then((response) => response.json())
  for (const [path, operations] of Object.entries<any>(openapi.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      documented.set(`${method.toUpperCase()} ${path}`, new Set(Object.keys(operation.responses)))
    }
  }
  ids.contact = (await created("POST", "/contacts", { email: "fixture@example.com", data: { plan: "pro" } })).id
  await created("POST", "/v1/track", { email: "fixture@example.com", event: "fixture_event" }, context.project.publicKey)
  ids.template = (await created("POST", "/templates", { name: "T", subject: "Hi", body: "<p>Hi</p>", from: "news@acme.test" })).id
  ids.segment = (await created("POST", "/segments", {
    name: "Pro",
    condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
  })).id
  ids.staticSegment = (await created("POST", "/segments", { name: "Static", type: "STATIC" })).id
  ids.campaign = (await created("POST", "/campaigns", {
    name: "C",
    subject: "S",
    body: "<p>B</p>",
    from: "news@acme.test",
    audienceType: "ALL"
  })).data.id
  const workflow = await created("POST", "/workflows", { name: "W", eventName: "fixture_event", allowReentry: true })
  ids.workflow = workflow.id
  ids.step = (await created("POST", `/workflows/${ids.workflow}/steps`, { type: "EXIT", config: { reason: "done" } })).id
  ids.trigger = workflow.steps[0].id
  ids.delayStep = (await created("POST", `/workflows/${ids.workflow}/steps`, { type: "DELAY", config: { amount: 1, unit: "days" } })).id
  ids.transition = (await created("POST", `/workflows/${ids.workflow}/transitions`, {
    fromStepId: ids.trigger,
    toStepId: ids.step
  })).id
  // Executions start only while the workflow is enabled; disabled again after, so tracked events start none.
  await created("PATCH", `/workflows/${ids.workflow}`, { enabled: true })
  ids.execution = (await created("POST", `/workflows/${ids.workflow}/executions`, { contactId: ids.contact })).id
  await created("PATCH", `/workflows/${ids.workflow}`, { enabled: false })
  ids.email = (await created("POST", "/v1/send", {
    to: "fixture@example.com",
    from: "news@acme.test",
    subject: "S",
    body: "<p>B</p>"
  })).data.emails[0].email
  ids.domain = (await call("GET", `/domains/project/${context.project.id}`)).json[0].id
})

const paramValue = (endpoint: Endpoint, name: string): string => {
  switch (name) {
    case "id":
      return endpoint.group === "contacts"
        ? ids.contact!
        : endpoint.group === "templates"
        ? ids.template!
        : endpoint.group === "segments"
        ? endpoint.path.includes("/members") ? ids.staticSegment! : ids.segment!
        : endpoint.group === "campaigns"
        ? ids.campaign!
        : endpoint.group === "workflows"
        ? ids.workflow!
        : endpoint.group === "domains"
        ? ids.domain!
        : ids.email!
    case "stepId":
      return ids.step!
    case "transitionId":
      return ids.transition!
    case "executionId":
      return ids.execution!
    case "contactId":
      return ids.contact!
    case "emailId":
      return ids.email!
    case "projectId":
      return context.project.id
    case "eventName":
      return "fixture_event"
    case "field":
      return "data.plan"
    default:
      return "x"
  }
}

const QUERY_VALUES: Record<string, string> = {
  limit: "10",
  page: "1",
  pageSize: "5",
  search: "a",
  sort: "name",
  dir: "asc",
  type: "MARKETING",
  status: "DRAFT",
  name: "fixture_event",
  from: "2020-01-01T00:00:00.000Z",
  to: "2030-01-01T00:00:00.000Z",
  splice: "false",
  subscribed: "true",
  u: "https://example.com/"
}

// ---- valid-ish JSON bodies from the payload schema ----

const uniqueEmail = fc.uuid().map((uuid) => `h${uuid.slice(0, 8)}@example.com`)
const condition = fc.constant({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] })
const dataValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.boolean(),
  fc.record({ tier: fc.string({ maxLength: 6 }) }),
  fc.record({ value: fc.string({ maxLength: 6 }), persistent: fc.constant(false) })
)
const customData = fc.dictionary(fc.constantFrom("plan", "seats", "profile", "first name", "locale", "tier", "score"), dataValue, {
  minKeys: 1,
  maxKeys: 4
})
const stepConfig = fc.constantFrom<unknown>(
  { reason: "done" },
  { amount: 1, unit: "days" },
  { eventName: "fixture_event", timeout: 60 },
  { field: "data.plan", operator: "equals", value: "pro" },
  { updates: { plan: "gold" }, subscriptionAction: "none" },
  { url: "https://example.com/hook", method: "POST", headers: { "x-a": "b" }, body: "{}" }
)

const stringFor = (name: string): fc.Arbitrary<unknown> => {
  switch (name) {
    case "email":
    case "emails":
    case "to":
    case "customEmail":
      return uniqueEmail
    case "from":
    case "reply":
    case "replyTo":
      return fc.constant("news@acme.test")
    case "template":
    case "templateId":
      return fc.constant(ids.template)
    case "segmentId":
      return fc.constant(ids.segment)
    case "contactId":
      return fc.constant(ids.contact)
    case "fromStepId":
    case "toStepId":
      return fc.constant(ids.step)
    case "event":
    case "eventName":
      return fc.constantFrom("signed_up", "fixture_event", "paid")
    case "scheduledFor":
      return fc.constant("2099-01-01T00:00:00.000Z")
    case "domain":
      return fc.uuid().map((uuid) => `h${uuid.slice(0, 8)}.test`)
    case "projectId":
      return fc.constant(context.project.id)
    case "messageId":
      return fc.constant("<fixture@acme.test>")
    case "content":
      return fc.constant("aGVsbG8=")
    case "filename":
      return fc.constant("a.txt")
    case "contentType":
      return fc.constant("text/plain")
    case "type":
      return fc.constantFrom("EXIT", "DELAY", "CONDITION", "UPDATE_CONTACT", "WEBHOOK")
    default:
      return fc.string({ minLength: 1, maxLength: 16 })
  }
}

const unknownFor = (name: string): fc.Arbitrary<unknown> => {
  switch (name) {
    case "data":
    case "context":
    case "updates":
      return customData
    case "condition":
    case "audienceCondition":
      return condition
    case "config":
      return stepConfig
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

const isOptional = (ast: SchemaAST.AST) => ast.context?.isOptional === true

/** Valid-ish values for a schema; `complete` fills every optional field too (the sweep's base). */
const arbitraryOf = (ast: SchemaAST.AST, name: string, complete = false): fc.Arbitrary<unknown> => {
  switch (ast._tag) {
    case "Objects": {
      if (ast.propertySignatures.length > 0) {
        const fields = ast.propertySignatures.map((property) => [String(property.name), property.type] as const)
        return fc.record(Object.fromEntries(fields.map(([key, type]) => [key, arbitraryOf(type, key, complete)])), {
          requiredKeys: fields.filter(([, type]) => complete || !isOptional(type)).map(([key]) => key)
        })
      }
      if (ast.indexSignatures.length > 0) {
        return name === "data" || name === "context"
          ? customData
          : name === "headers"
          ? fc.constant({ "X-Tag": "v" })
          : fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), arbitraryOf(ast.indexSignatures[0]!.type, name, complete), {
            maxKeys: 3
          })
      }
      return unknownFor(name)
    }
    case "Arrays":
      return ast.rest.length > 0
        // A batch's events: two at most keep each request cheap (the sweep mutates every leaf of each).
        ? fc.array(arbitraryOf(ast.rest[0]!, name, complete), { minLength: 1, maxLength: name === "events" ? 2 : 3 })
        : fc.tuple(...ast.elements.map((element) => arbitraryOf(element, name, complete)))
    case "Union": {
      const members = ast.types.filter((member) => member._tag !== "Undefined" && !(complete && member._tag === "Null"))
      return fc.oneof(...members.map((member) => arbitraryOf(member, name, complete)))
    }
    case "Suspend":
      return arbitraryOf(ast.thunk(), name, complete)
    case "Literal":
      return fc.constant(ast.literal)
    case "Enum":
      return fc.constantFrom(...ast.enums.map(([, value]) => value))
    case "String":
      return stringFor(name)
    case "Number":
      return fc.integer({ min: 0, max: 100 })
    case "Boolean":
      return fc.boolean()
    case "Null":
      return fc.constant(null)
    default:
      // The contract takes a batch's events as any JSON (checked one by one); valid-ish ones are /v1/track bodies.
      return name === "events" ? arbitraryOf(TrackBody.ast, name, complete) : unknownFor(name)
  }
}

// ---- mutations ----

type Path = ReadonlyArray<string | number>

const DEEP = 5_000
const DEEP_ARRAY = "@@deep-array@@"
const DEEP_OBJECT = "@@deep-object@@"
/** Markers replaced in the JSON text: JSON.stringify itself cannot write 5,000 levels. */
const serialize = (body: unknown) =>
  JSON.stringify(body)
    .replaceAll(`"${DEEP_ARRAY}"`, "[".repeat(DEEP) + "]".repeat(DEEP))
    .replaceAll(`"${DEEP_OBJECT}"`, '{"a":'.repeat(DEEP) + "1" + "}".repeat(DEEP))

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const nodesOf = (value: unknown, path: Path = []): Array<{ path: Path; value: unknown }> => {
  const own = [{ path, value }]
  if (Array.isArray(value)) return own.concat(value.flatMap((item, index) => nodesOf(item, [...path, index])))
  if (isObject(value)) return own.concat(Object.keys(value).flatMap((key) => nodesOf(value[key], [...path, key])))
  return own
}

/** Sets an own property, `__proto__` included (plain assignment would change the prototype instead). */
const defineOwn = (target: object, key: string | number, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })

const copy = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(copy)
  if (!isObject(value)) return value
  const out = {}
  for (const key of Object.keys(value)) defineOwn(out, key, copy(value[key]))
  return out
}

const updateAt = (root: unknown, path: Path, update: (node: unknown) => unknown): unknown => {
  if (path.length === 0) return update(root)
  const result = copy(root) as Record<string | number, unknown>
  let parent = result
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
  const last = path[path.length - 1]!
  defineOwn(parent, last, update(parent[last]))
  return result
}

interface Mutation {
  readonly name: string
  readonly applies: (node: unknown) => boolean
  readonly apply: (node: unknown) => unknown
}

const always = () => true
const addKey = (key: string, value: unknown) => (node: unknown) => {
  const out = copy(node) as object
  defineOwn(out, key, value)
  return out
}

const MUTATIONS: ReadonlyArray<Mutation> = [
  { name: "NUL in a string", applies: always, apply: (node) => `${typeof node === "string" ? node : "a"}\u0000b` },
  { name: "a lone high surrogate", applies: always, apply: (node) => `${typeof node === "string" ? node : "a"}\ud800` },
  { name: "a lone low surrogate", applies: always, apply: () => "\udc00x" },
  { name: "a 1 MB string", applies: always, apply: () => "x".repeat(1_000_000) },
  { name: "a 100 KB string", applies: always, apply: () => "x".repeat(100_000) },
  { name: "arrays nested 5,000 deep", applies: always, apply: () => DEEP_ARRAY },
  { name: "objects nested 5,000 deep", applies: always, apply: () => DEEP_OBJECT },
  { name: "a __proto__ key", applies: isObject, apply: addKey("__proto__", { polluted: true }) },
  { name: "a constructor key", applies: isObject, apply: addKey("constructor", { prototype: { polluted: true } }) },
  { name: "an unknown key", applies: isObject, apply: addKey("zzUnknown", "x") },
  { name: "a key with NUL", applies: isObject, apply: addKey("k\u0000", "x") },
  { name: "a key with a lone surrogate", applies: isObject, apply: addKey("k\ud83d", "x") },
  { name: "a number", applies: always, apply: () => 42 },
  { name: "a boolean", applies: always, apply: () => true },
  { name: "null", applies: always, apply: () => null },
  { name: "an array", applies: always, apply: () => ["x"] },
  { name: "an object", applies: always, apply: () => ({ x: 1 }) }
]
const SWEEP = MUTATIONS.filter((mutation) =>
  ["NUL in a string", "a lone high surrogate", "a 100 KB string", "arrays nested 5,000 deep", "a __proto__ key"].includes(mutation.name)
)

/** Hostile URL text, already percent-encoded as a client could send it. */
const URL_VALUES = [
  "%00",
  "a%00b",
  "%ED%A0%80", // U+D800 encoded as UTF-8 (not valid UTF-8)
  "%C0%80", // an overlong NUL
  "%FF",
  "%F0%9F%98",
  "x".repeat(6_000)
]
const forgedCursor = (values: unknown) => Buffer.from(JSON.stringify(values)).toString("base64url")
const CURSOR_VALUES = [
  forgedCursor(["\u0000"]),
  forgedCursor(["\ud800"]),
  forgedCursor(["2024-01-01T00:00:00.000Z\u0000", "0190a3c2-0000-7000-8000-000000000000"]),
  forgedCursor([1]),
  forgedCursor([[["x"]]]),
  forgedCursor({ a: 1 }),
  "%00"
]

// ---- cases ----

interface Case {
  readonly description: string
  readonly params: Record<string, string>
  readonly query: Record<string, string>
  readonly body: unknown
  readonly hasBody: boolean
}

/** Step configs that go with each step type (the schema leaves `config` open). */
const CONFIGS: Record<string, unknown> = {
  EXIT: { reason: "done" },
  DELAY: { amount: 1, unit: "days" },
  WAIT_FOR_EVENT: { eventName: "fixture_event", timeout: 60 },
  CONDITION: { field: "data.plan", operator: "equals", value: "pro" },
  UPDATE_CONTACT: { updates: { plan: "gold" }, subscriptionAction: "none" },
  WEBHOOK: { url: "https://example.com/hook", method: "POST", headers: { "x-a": "b" }, body: "{}" }
}

/** Makes the parts the schema cannot tie together agree, so mutations reach deeper than the first check. */
const coherent = (endpoint: Endpoint, body: unknown): unknown => {
  if (!isObject(body)) return body
  const out = copy(body) as Record<string, unknown>
  if (endpoint.name === "addStep" && typeof out.type === "string") out.config = CONFIGS[out.type] ?? out.config
  if (endpoint.name === "updateStep") out.config = CONFIGS.EXIT
  if (endpoint.group === "campaigns" && out.audienceType === "SEGMENT") out.segmentId = ids.segment
  if (endpoint.group === "send") delete out.template
  // The fixture contact keeps its address: another contact's would be a 409 before anything else is checked.
  if (endpoint.name === "update") delete out.email
  if (endpoint.group === "workflows" && endpoint.name === "update") out.allowReentry = true
  if (endpoint.name === "addTransition") {
    out.fromStepId = ids.delayStep
    out.toStepId = ids.step
    delete out.branch
    delete out.waitOutcome
  }
  return out
}

const queryKeys = (endpoint: Endpoint) =>
  (endpoint.query?.propertySignatures ?? []).map((property) => String(property.name)).filter((key) => key in QUERY_VALUES)

const baseOf = (endpoint: Endpoint, complete = false) =>
  fc.record({
    query: (complete ? fc.constant(queryKeys(endpoint)) : fc.subarray(queryKeys(endpoint)))
      .map((keys) => Object.fromEntries(keys.map((key) => [key, QUERY_VALUES[key]!]))),
    body: endpoint.body ? arbitraryOf(endpoint.body, "body", complete).map((body) => coherent(endpoint, body)) : fc.constant(undefined)
  }).map(({ query, body }): Case => ({
    description: "",
    params: Object.fromEntries((endpoint.params?.propertySignatures ?? []).map((property) => {
      const name = String(property.name)
      return [name, paramValue(endpoint, name)]
    })),
    query,
    body,
    hasBody: endpoint.body !== undefined
  }))

const mutateBody = (base: Case, path: Path, mutation: Mutation): Case => ({
  ...base,
  description: `body${path.map((key) => `[${JSON.stringify(key)}]`).join("")}: ${mutation.name}`,
  body: updateAt(base.body, path, mutation.apply)
})

const hostileCase = (endpoint: Endpoint): fc.Arbitrary<Case> => {
  const slots: Array<fc.Arbitrary<Case>> = []
  if (endpoint.body) {
    slots.push(
      fc.tuple(baseOf(endpoint), fc.nat(), fc.nat()).map(([base, nodeIndex, mutationIndex]) => {
        const nodes = nodesOf(base.body)
        const node = nodes[nodeIndex % nodes.length]!
        const applicable = MUTATIONS.filter((mutation) => mutation.applies(node.value))
        return mutateBody(base, node.path, applicable[mutationIndex % applicable.length]!)
      })
    )
  }
  for (const property of endpoint.params?.propertySignatures ?? []) {
    const name = String(property.name)
    slots.push(
      fc.tuple(baseOf(endpoint), fc.constantFrom(...URL_VALUES)).map(([base, value]) => ({
        ...base,
        description: `path :${name} = ${value.slice(0, 20)}`,
        params: { ...base.params, [name]: value }
      }))
    )
  }
  for (const property of endpoint.query?.propertySignatures ?? []) {
    const name = String(property.name)
    const values = name === "cursor" ? [...CURSOR_VALUES, ...URL_VALUES] : URL_VALUES
    slots.push(
      fc.tuple(baseOf(endpoint), fc.constantFrom(...values)).map(([base, value]) => ({
        ...base,
        description: `query ${name} = ${value.slice(0, 40)}`,
        query: { ...base.query, [name]: value }
      }))
    )
  }
  return fc.oneof(...slots)
}

/**
 * The sweep, so the check does not depend on the draw: NUL, a lone surrogate, 100 KB (longer than any
 * field may be) and 5,000 levels at every leaf of one sample body, a `__proto__` key in every object.
 * (1 MB values come with the random cases.)
 */
const sweepBody = (base: Case): Array<Case> =>
  nodesOf(base.body).flatMap((node) =>
    SWEEP.filter((mutation) =>
      mutation.applies(node.value) && (isObject(node.value) ? mutation.name === "a __proto__ key" : !Array.isArray(node.value))
    )
      .map((mutation) => mutateBody(base, node.path, mutation))
  )

/** Every path parameter and query value, still valid up to a NUL or a lone surrogate appended to it; forged cursors. */
const sweepUrl = (base: Case): Array<Case> => {
  const appended = (value: string) => [`${value}%00`, `${value}%ED%A0%80`]
  const params = Object.entries(base.params).flatMap(([name, value]) =>
    appended(value).map((hostile) => ({ ...base, description: `path :${name} = ${hostile}`, params: { ...base.params, [name]: hostile } }))
  )
  const query = Object.entries(base.query).flatMap(([name, value]) =>
    appended(value).map((hostile) => ({ ...base, description: `query ${name} = ${hostile}`, query: { ...base.query, [name]: hostile } }))
  )
  const cursors = "limit" in base.query
    ? CURSOR_VALUES.flatMap((cursor) =>
      ["createdAt", "email"].map((sort) => ({
        ...base,
        description: `query sort=${sort}, cursor = ${cursor}`,
        query: { ...base.query, sort, cursor }
      }))
    )
    : []
  return [...params, ...query, ...cursors]
}

const sweep = (endpoint: Endpoint): Array<Case> => {
  const [base] = fc.sample(baseOf(endpoint, true), { numRuns: 1, seed: SEED })
  return [...sweepBody(base!), ...sweepUrl(base!)]
}

// ---- requests and what the answers must be ----

const urlOf = (endpoint: Endpoint, hostile: Case) => {
  // Values are either our own (ids, plain words) or already percent-encoded hostile text.
  const path = endpoint.path.replace(/:(\w+)/g, (_, name: string) => hostile.params[name] ?? "x")
  const query = Object.entries(hostile.query).map(([key, value]) => `${key}=${value}`).join("&")
  return query === "" ? path : `${path}?${query}`
}

const withFreshEmail = (body: unknown): unknown => {
  if (!isObject(body) || typeof body.email !== "string" || !/^h[0-9a-f]{8}@example\.com$/.test(body.email)) return body
  const out = copy(body) as Record<string, unknown>
  out.email = `h${Math.random().toString(16).slice(2, 10)}${Date.now().toString(16)}@example.com`
  return out
}

const uniqueBodyEmail = (endpoint: Endpoint, hostile: Case): Case => {
  // Track and contact upserts each get a fresh contact, so what one accepted is checked on its own.
  if (endpoint.name === "trackBatch" && isObject(hostile.body) && Array.isArray(hostile.body.events)) {
    const body = copy(hostile.body) as Record<string, unknown>
    body.events = (hostile.body.events as Array<unknown>).map(withFreshEmail)
    return { ...hostile, body }
  }
  if (endpoint.group !== "track" && endpoint.name !== "upsert") return hostile
  return { ...hostile, body: withFreshEmail(hostile.body) }
}

const RESERVED = new Set(["id", "plunk_id", "plunk_email", "email", "unsubscribeUrl", "subscribeUrl", "manageUrl"])

/** What the custom-data rules say a `data` payload stores (own keys, `__proto__` included). */
const storedData = (data: unknown): Map<string, unknown> => {
  const out = new Map<string, unknown>()
  if (!isObject(data)) return out
  for (const key of Object.keys(data)) {
    const value = data[key]
    if (RESERVED.has(key) || value === "" || value === null || value === undefined) continue
    if (isObject(value) && value.persistent === false && "value" in value) continue
    out.set(key, isObject(value) && value.persistent === true && "value" in value ? value.value : value)
  }
  return out
}

const missingData = (stored: unknown, expected: Map<string, unknown>): Array<string> =>
  [...expected].flatMap(([key, value]) => {
    if (!isObject(stored) || !Object.hasOwn(stored, key)) return [`data key ${JSON.stringify(key)} is missing`]
    const primitive = typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    return primitive && stored[key] !== value ? [`data.${key} is ${JSON.stringify(stored[key])}, not ${JSON.stringify(value)}`] : []
  })

const refusalProblem = (endpoint: Endpoint, status: number, json: any): string | undefined => {
  if (status >= 500) return `answered ${status}`
  const statuses = documented.get(operationKey(endpoint))
  if (!statuses?.has(String(status)))
    return `answered ${status}, which ${operationKey(endpoint)} does not document (${[...statuses ?? []].join(", ")})`
  if (status < 400 || endpoint.page) return undefined
  if (endpoint.bare && status === 400 && isObject(json) && typeof json.error === "string" && Object.keys(json).length === 1)
    return undefined
  const error = json?.error
  if (json?.success === false && typeof error?.code === "string" && error.statusCode === status && typeof error.requestId === "string") {
    return undefined
  }
  return `answered ${status} outside the error envelope`
}

interface Accepted {
  readonly description: string
  /** The event's contact and id, as /v1/track answers them; or its email and name (/v1/track/batch answers neither). */
  readonly recorded: { readonly contactId: string; readonly eventId: string } | { readonly email: string; readonly eventName: string }
  readonly data: Map<string, unknown>
}

const exercise = async (endpoint: Endpoint, hostile: Case, failures: Array<string>, accepted: Array<Accepted>) => {
  const key = endpoint.publicKey ? context.project.publicKey : context.project.secretKey
  const rawBody = hostile.hasBody ? serialize(hostile.body) : undefined
  const response = await request(context.api.url, endpoint.method, urlOf(endpoint, hostile), {
    key,
    ...(rawBody === undefined ? {} : { rawBody })
  })
  const problem = refusalProblem(endpoint, response.status, response.json)
  if (problem) {
    failures.push(`${hostile.description}: ${problem}: ${response.text.slice(0, 200)}`)
    return
  }
  if (response.status >= 300 || !isObject(hostile.body)) return
  const data = storedData(hostile.body.data)
  if (endpoint.name === "trackBatch") {
    const rejected = new Set(response.json.data.rejected.map((item: { index: number }) => item.index))
    // `events` replaced by a marker of deep nesting went out as one deeply nested item: nothing to accept.
    const events: Array<Record<string, any>> = Array.isArray(hostile.body.events) ? hostile.body.events : []
    const kept = events.flatMap((event, index) => rejected.has(index) ? [] : [{ event, index }])
    if (response.json.data.accepted !== kept.length) {
      failures.push(`${hostile.description}: accepted ${response.json.data.accepted} events of ${events.length}, rejected ${rejected.size}`)
    }
    for (const { event, index } of kept) {
      accepted.push({
        description: `${hostile.description} (event ${index})`,
        recorded: { email: event.email.trim().toLowerCase(), eventName: event.event.trim() },
        data: storedData(event.data)
      })
    }
  } else if (endpoint.group === "track") {
    accepted.push({
      description: hostile.description,
      recorded: { contactId: response.json.data.contact, eventId: response.json.data.event },
      data
    })
  } else if (endpoint.group === "contacts" && (endpoint.name === "upsert" || endpoint.name === "update")) {
    const stored = await call("GET", `/contacts/${response.json.id}`)
    const missing = missingData(stored.json?.data, data)
    if (missing.length > 0) failures.push(`${hostile.description}: answered ${response.status}, then ${missing.join("; ")}`)
  }
}

/** The contact of an email: the API's search is by substring, so the exact match is picked. */
const contactIdOf = async (email: string): Promise<string> => {
  const found = await call("GET", `/contacts?search=${encodeURIComponent(email)}&limit=100`)
  const contact = found.json.data.find((candidate: { email: string }) => candidate.email === email)
  expect(contact, `contact ${email}`).toBeDefined()
  return contact.id
}

/** After a 2xx from /v1/track (or /v1/track/batch), the event and the data it set show up through the API. */
const checkAccepted = async (accepted: ReadonlyArray<Accepted>, failures: Array<string>) => {
  for (const item of accepted) {
    try {
      await eventually(async () => {
        const { recorded } = item
        const contactId = "contactId" in recorded ? recorded.contactId : await contactIdOf(recorded.email)
        const events = (await call("GET", `/events?contactId=${contactId}&limit=100`)).json.data
        if ("eventId" in recorded) expect(events.map((event: { id: string }) => event.id)).toContain(recorded.eventId)
        else expect(events.map((event: { name: string }) => event.name)).toContain(recorded.eventName)
        const contact = await call("GET", `/contacts/${contactId}`)
        expect(missingData(contact.json.data, item.data)).toEqual([])
      }, 8_000)
    } catch (error) {
      failures.push(`${item.description}: answered 200, then the event or its data never showed up (${String(error).slice(0, 200)})`)
    }
  }
}

// ---- the rules one by one (issue 21, items 3, 4, 5 and 8) ----

const refused = (response: Awaited<ReturnType<typeof request>>, field: string, code?: string) => {
  expect(response.status, response.text).toBe(422)
  expect(response.json.error).toMatchObject({ code: "VALIDATION_ERROR", statusCode: 422, requestId: expect.any(String) })
  expect(response.json.error.errors).toContainEqual(expect.objectContaining({ field, ...(code ? { code } : {}) }))
}
const raw = (method: string, path: string, rawBody: string, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, rawBody })
const track = (body: unknown) => call("POST", "/v1/track", body, context.project.publicKey)
const mail = { to: "edge@example.com", from: "news@acme.test", subject: "S", body: "<p>B</p>" }
const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

describe("the edge refuses what Postgres cannot store", () => {
  it("a lone surrogate in /v1/track data, a non-persistent value or the event name: 422 with the field, nothing dead-lettered", async () => {
    refused(await track({ email: "edge@example.com", event: "x", data: { plan: "a\ud800" } }), "data.plan", "invalid_string")
    refused(
      await track({ email: "edge@example.com", event: "x", data: { once: { value: "\udc00", persistent: false } } }),
      "data.once.value"
    )
    refused(await track({ email: "edge@example.com", event: "x\ud800" }), "event")
    refused(await call("POST", "/contacts", { email: "edge@example.com", data: { plan: "\ud800" } }), "data.plan")
    refused(await call("POST", "/v1/send", { ...mail, data: { plan: "\ud800" } }), "data.plan")
    refused(
      await call("POST", `/workflows/${ids.workflow}/executions`, { contactId: ids.contact, context: { note: "\udc00" } }),
      "context.note"
    )
    // A well-formed event after them is recorded, and nothing of this project ever went to dead_letters.
    const accepted = await track({ email: "edge@example.com", event: "after_refusals", data: { plan: "ok \ud83d\ude00" } })
    expect(accepted.status).toBe(200)
    await eventually(async () => {
      const events = await call("GET", `/events?contactId=${accepted.json.data.contact}`)
      expect(events.json.data.map((event: { id: string }) => event.id)).toContain(accepted.json.data.event)
    })
    expect((await context.stack.query("SELECT count(*)::int AS n FROM dead_letters WHERE project_id = $1", [context.project.id]))[0])
      .toEqual({ n: 0 })
  })

  it("NUL where it answered 500: every body field, query string and path parameter is a 422 naming it", async () => {
    const workflow = `/workflows/${ids.workflow}`
    const bodies: Array<[string, string, unknown, string]> = [
      ["POST", "/v1/send", { ...mail, subject: "a\u0000" }, "subject"],
      ["POST", "/v1/send", { ...mail, body: "a\u0000" }, "body"],
      ["POST", "/v1/send", { ...mail, headers: { "X-Tag": "a\u0000" } }, "headers.X-Tag"],
      ["POST", "/v1/send", { ...mail, from: { name: "a\u0000", email: "news@acme.test" } }, "from.name"],
      ["POST", "/v1/send", { ...mail, to: { name: "a\u0000", email: "edge@example.com" } }, "to.name"],
      ["POST", "/templates", { name: "a\u0000", subject: "S", body: "B", from: "news@acme.test" }, "name"],
      ["POST", "/templates", { name: "T", subject: "S", body: "a\u0000", from: "news@acme.test" }, "body"],
      ["PATCH", `/templates/${ids.template}`, { description: "a\u0000" }, "description"],
      ["PATCH", `/templates/${ids.template}`, { fromName: "a\u0000" }, "fromName"],
      ["POST", "/segments", { name: "a\u0000", type: "STATIC" }, "name"],
      ["PATCH", `/segments/${ids.segment}`, { description: "a\u0000" }, "description"],
      ["POST", "/campaigns", { name: "a\u0000", subject: "S", body: "B", from: "news@acme.test", audienceType: "ALL" }, "name"],
      [
        "PUT",
        `/campaigns/${ids.campaign}`,
        { name: "C", subject: "S", body: "a\u0000", from: "news@acme.test", audienceType: "ALL" },
        "body"
      ],
      ["POST", "/workflows", { name: "a\u0000" }, "name"],
      ["PATCH", workflow, { description: "a\u0000" }, "description"],
      ["POST", `${workflow}/steps`, { type: "EXIT", name: "a\u0000", config: {} }, "name"],
      ["PATCH", `${workflow}/steps/${ids.step}`, { config: { reason: "a\u0000" } }, "config.reason"],
      ["POST", "/webhooks/generic", { id: "a\u0000", type: "delivered", messageId: "<x@acme.test>" }, "id"],
      ["POST", "/webhooks/generic", { id: "x".repeat(256), type: "delivered", messageId: "<x@acme.test>" }, "id"]
    ]
    for (const [method, path, body, field] of bodies) refused(await call(method, path, body), field)
    const urls: Array<[string, string]> = [
      ["/templates?search=%00", "search"],
      ["/campaigns?search=%00", "search"],
      ["/events?name=%00", "name"],
      ["/contacts/fields/data.%00/values", "field"],
      ["/contacts/fields/data.%00/usage", "field"]
    ]
    for (const [path, field] of urls) refused(await call("GET", path), field)
  })

  it("a forged cursor is the list's 400 INVALID_CURSOR, whatever its JSON holds", async () => {
    for (
      const path of ["/contacts?sort=email&cursor=WyJcdTAwMDAiXQ", `/events?cursor=${forgedCursor(["2024-01-01T00:00:00.000Z", "\ud800"])}`]
    ) {
      const response = await call("GET", path)
      expect(response.status, path).toBe(400)
      expect(response.json.error).toMatchObject({ code: "INVALID_CURSOR", statusCode: 400 })
    }
  })

  it("custom data, context and configs nest at most 32 levels: 5,000 is a 422 (not a stack overflow), 32 is stored", async () => {
    const nested = (levels: number) => raw("POST", "/contacts", `{"email":"deep@example.com","data":{"a":${deep(levels)}}}`)
    // `data` is the first level and `data.a` the second: 31 arrays in `data.a` reach the 32nd level, 32 go past it.
    refused(await nested(5_000), `data.a${"[0]".repeat(31)}`, "too_deep")
    refused(await nested(32), `data.a${"[0]".repeat(31)}`, "too_deep")
    const stored = await nested(31)
    expect(stored.status).toBe(201)
    expect(JSON.stringify(stored.json.data.a)).toBe(deep(31))
    refused(
      await raw("POST", `/workflows/${ids.workflow}/executions`, `{"contactId":"${ids.contact}","context":{"a":${deep(5_000)}}}`),
      `context.a${"[0]".repeat(31)}`,
      "too_deep"
    )
    refused(
      await raw("POST", "/v1/track", `{"email":"deep@example.com","event":"x","data":{"a":${deep(5_000)}}}`, context.project.publicKey),
      `data.a${"[0]".repeat(31)}`
    )
    refused(
      await raw("PATCH", `/workflows/${ids.workflow}/steps/${ids.step}`, `{"config":{"reason":${deep(5_000)}}}`),
      `config.reason${"[0]".repeat(31)}`
    )
  })
})

describe("/webhooks/ses body size", () => {
  it('answers 413 PAYLOAD_TOO_LARGE in the envelope for a notification over 256 KiB, also past 1 MiB (not 400 "not JSON")', async () => {
    for (const size of [300 * 1024, 2 * 1024 * 1024]) {
      const response = await request(context.api.url, "POST", "/webhooks/ses", {
        rawBody: JSON.stringify({ Type: "Notification", Message: "x".repeat(size) }),
        headers: { "content-type": "text/plain; charset=UTF-8" }
      })
      expect(response.status, response.text).toBe(413)
      expect(response.json.error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", statusCode: 413, message: expect.stringContaining("256 KiB") })
    }
  })
})

describe("__proto__ as a data key", () => {
  it("is refused with 422 naming the key, at any depth and on every writer of data", async () => {
    const proto = `{"__proto__":{"polluted":true}}`
    refused(await raw("POST", "/contacts", `{"email":"proto@example.com","data":${proto}}`), "data.__proto__", "forbidden_key")
    refused(
      await raw("POST", "/contacts", `{"email":"proto@example.com","data":{"profile":${proto}}}`),
      "data.profile.__proto__",
      "forbidden_key"
    )
    refused(await raw("PATCH", `/contacts/${ids.contact}`, `{"data":${proto}}`), "data.__proto__")
    refused(
      await raw("POST", "/v1/track", `{"email":"proto@example.com","event":"x","data":${proto}}`, context.project.publicKey),
      "data.__proto__"
    )
    refused(
      await raw("POST", "/v1/send", `{"to":"proto@example.com","from":"news@acme.test","subject":"S","body":"B","data":${proto}}`),
      "data.__proto__"
    )
    refused(
      await raw("POST", `/workflows/${ids.workflow}/executions`, `{"contactId":"${ids.contact}","context":${proto}}`),
      "context.__proto__"
    )
    refused(
      await raw("POST", `/workflows/${ids.workflow}/steps`, `{"type":"UPDATE_CONTACT","config":{"updates":${proto}}}`),
      "config.updates.__proto__"
    )
  })

  it("other keys named like Object.prototype members are stored as plain data", async () => {
    const data = { constructor: { prototype: { polluted: true } }, toString: "x", hasOwnProperty: 1 }
    const created = await call("POST", "/contacts", { email: "names@example.com", data })
    expect(created.status).toBe(201)
    expect((await call("GET", `/contacts/${created.json.id}`)).json.data).toEqual(data)
  })
})

describe(`hostile input, every endpoint of the contract (seed ${SEED})`, () => {
  it("covers the JSON endpoints of every group", () => {
    const groups = new Set(fuzzed.filter((endpoint) => endpoint.body).map((endpoint) => endpoint.group))
    // accounts (behind the session cookie) answer these key-authenticated cases 401; auth's public endpoints are fuzzed whole.
    expect([...groups].sort()).toEqual([
      "accounts",
      "auth",
      "campaigns",
      "contactJobs",
      "contacts",
      "destinations",
      "domains",
      "segments",
      "send",
      "templates",
      "track",
      "verify",
      "webhooks",
      "workflows"
    ])
  })

  for (const endpoint of fuzzed) {
    it(`${endpoint.method} ${endpoint.path}: no 5xx, refusals in the envelope, nothing accepted then lost`, async () => {
      const cases = [...sweep(endpoint), ...fc.sample(hostileCase(endpoint), { numRuns: RUNS, seed: SEED })]
      const failures: Array<string> = []
      const accepted: Array<Accepted> = []
      for (const hostile of cases) await exercise(endpoint, uniqueBodyEmail(endpoint, hostile), failures, accepted)
      await checkAccepted(accepted, failures)
      expect(failures, `seed ${SEED}`).toEqual([])
    })
  }
})
