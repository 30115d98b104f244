import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let first: Service
let second: Service
let project: TestProject
let other: TestProject

const LIMIT = 20

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: String(LIMIT) })
  ;[first, second] = await Promise.all([stack.start("api"), stack.start("api")])
  project = await stack.createProject()
  other = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
})

describe("rate limit", () => {
  it("holds one budget per project across two api processes", async () => {
    const responses = await Promise.all(
      Array.from(
        { length: LIMIT + 10 },
        (_, i) => request(i % 2 === 0 ? first.url : second.url, "GET", "/contacts", { key: project.secretKey })
      )
    )
    const ok = responses.filter((r) => r.status === 200)
    const limited = responses.filter((r) => r.status === 429)
    expect(ok).toHaveLength(LIMIT)
    expect(limited).toHaveLength(10)
    // Both processes enforced it.
    expect(new Set(limited.map((r) => r.json.error.requestId)).size).toBe(10)

    const sample = limited[0]!
    // The reference's code (its middleware/__tests__/rateLimit.test.ts "refuses the request once the burst is spent, with a retry hint").
    expect(sample.json.error).toMatchObject({ code: "RATE_LIMIT_EXCEEDED", statusCode: 429 })
    const retryAfter = Number(sample.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(sample.headers.get("ratelimit-limit")).toBe(String(LIMIT))
    expect(sample.headers.get("ratelimit-remaining")).toBe("0")
    expect(ok[0]!.headers.get("ratelimit-limit")).toBe(String(LIMIT))

    // Another project has its own budget.
    expect((await request(second.url, "GET", "/contacts", { key: other.secretKey })).status).toBe(200)
  })

  it("admits no more than the limit in any 60 s, across the turn of a minute", async () => {
    const fresh = await stack.createProject()
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    // Fixed windows turned with the clock's minute: one burst before the turn, one just after it.
    // Both within 60 s: not just after a turn, nor so close before one that the burst straddles it.
    const msIntoMinute = Date.now() % 60_000
    if (msIntoMinute < 1_000 || msIntoMinute > 55_000) await sleep(60_000 - msIntoMinute + 1_000)
    const burst = () =>
      Promise.all(
        Array.from({ length: LIMIT }, (_, i) => request(i % 2 === 0 ? first.url : second.url, "GET", "/contacts", { key: fresh.secretKey }))
      )

    const started = Date.now()
    expect((await burst()).filter((r) => r.status === 200)).toHaveLength(LIMIT)
    const firstDone = Date.now()
    await sleep(60_000 - (Date.now() % 60_000) + 300)
    const sent = Date.now()
    const after = await burst()
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(after.map((r) => r.status)).toEqual(Array(LIMIT).fill(429))
    // Retry-After: when the first burst's requests are 60 s old.
    for (const refused of after) {
      const retryAfter = Number(refused.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(Math.floor((started + 60_000 - Date.now()) / 1000))
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil((firstDone + 60_000 - sent) / 1000))
      expect(refused.json.error.details.retryAfterSeconds).toBe(retryAfter)
    }
  }, 120_000)

  it("does not count requests without a valid key against a project", async () => {
    const fresh = await stack.createProject()
    for (let i = 0; i < LIMIT + 5; i++) await request(first.url, "GET", "/contacts", { key: "sk_wrong" })
    expect((await request(first.url, "GET", "/contacts", { key: fresh.secretKey })).status).toBe(200)
  })
  it("counts each accepted event of a /v1/track/batch as a request, a batch as one at least", async () => {
    const fresh = await stack.createProject()
    const events = (n: number) => Array.from({ length: n }, (_, i) => ({ email: `rl${i}@example.com`, event: "counted" }))
    const send = (body: unknown) => request(first.url, "POST", "/v1/track/batch", { key: fresh.publicKey, body })

    // 12 accepted events (the 13th is rejected and not counted): 12 of 20.
    const twelve = await send({ events: [...events(12), { email: "x", event: "counted" }] })
    expect(twelve.json.data).toMatchObject({ accepted: 12 })
    expect(twelve.headers.get("ratelimit-remaining")).toBe(String(LIMIT - 12))
    // All rejected: the request still counts as one.
    expect((await send({ events: [{ email: "x", event: "counted" }] })).headers.get("ratelimit-remaining")).toBe(String(LIMIT - 13))
    // 8 more do not fit in the 7 left: the whole batch is refused.
    const over = await send({ events: events(8) })
    expect(over.status, over.text).toBe(429)
    expect(over.json.error).toMatchObject({ code: "RATE_LIMIT_EXCEEDED", message: expect.stringContaining("per accepted event") })
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  })
})
