/**
 * POST /segments/preview: the count and sample of what a condition (or a segment, or everything)
 * matches now, without saving anything; the dashboard's live count while a segment or a campaign
 * audience is edited. Conditions are checked as a segment's (422 with the node's path).
 */
import { describe, expect, it } from "vitest"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("api", (context) => ({ stack, api, project } = context))

const secret = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })
const preview = (body: unknown, key?: string) => secret("POST", "/segments/preview", body, key)
const plan = (value: string) => ({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value }] }] })

describe("segment preview", () => {
  it("counts and samples what a nested condition matches, the reachable share, a segment's members and everything", async () => {
    for (let i = 0; i < 12; i++) {
      await secret("POST", "/contacts", {
        email: `p${i}@preview.test`,
        subscribed: i !== 0,
        data: { plan: i % 3 === 0 ? "pro" : "free", seats: i }
      })
    }
    await stack.query("INSERT INTO suppressions (project_id, email, reason) VALUES ($1, 'p3@preview.test', 'bounce')", [project.id])
    // pro (p0, p3, p6, p9) OR seats >= 10 (p10, p11): six; p0 is unsubscribed and p3 suppressed.
    const condition = {
      logic: "AND",
      groups: [{
        filters: [{ field: "email", operator: "contains", value: "@preview.test" }],
        conditions: {
          logic: "OR",
          groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }, {
            filters: [{ field: "data.seats", operator: "greaterThanOrEqual", value: 10 }]
          }]
        }
      }]
    }
    const result = await preview({ condition, sampleSize: 3 })
    expect(result.status).toBe(200)
    expect(result.json.total).toBe(6)
    expect(result.json.reachable).toBe(4)
    expect(result.json.sample.map((contact: { email: string }) => contact.email)).toEqual([
      "p11@preview.test",
      "p10@preview.test",
      "p9@preview.test"
    ])
    expect((await preview({ condition: plan("free") })).json).toMatchObject({ total: 8, reachable: 8 })
    expect((await preview({ condition: plan("free") })).json.sample).toHaveLength(8)
    expect((await preview({ condition: plan("free"), sampleSize: 0 })).json.sample).toEqual([])
    // Nothing was saved.
    expect((await secret("GET", "/segments")).json).toEqual([])

    expect((await preview({})).json).toMatchObject({ total: 12, reachable: 10 })
    const picked = await secret("POST", "/segments", { name: "Picked", type: "STATIC" })
    await secret("POST", `/segments/${picked.json.id}/members`, { emails: ["p1@preview.test", "p0@preview.test"] })
    expect((await preview({ segmentId: picked.json.id })).json).toMatchObject({ total: 2, reachable: 1 })
  })

  it("answers 422 at the offending node, 404 for another project's segment, and stays inside the project", async () => {
    const bad = await preview({
      condition: {
        logic: "OR",
        groups: [{
          filters: [{ field: "data.plan", operator: "equals", value: "pro" }],
          conditions: { logic: "AND", groups: [{ filters: [{ field: "event.buy", operator: "triggeredWithin", value: 3 }] }] }
        }]
      }
    })
    expect(bad.status).toBe(422)
    expect(bad.json.error.errors).toEqual([
      expect.objectContaining({ field: "condition.groups[0].conditions.groups[0].filters[0].unit", code: "required" })
    ])
    expect((await preview({ condition: "pro" })).status).toBe(422)
    expect((await preview({ condition: plan("pro"), sampleSize: 51 })).status).toBe(422)
    const both = await preview({ condition: plan("pro"), segmentId: "0190a3c2-0000-7000-8000-000000000000" })
    expect(both.status).toBe(422)
    expect(both.json.error.errors[0].field).toBe("segmentId")

    const other = await stack.createProject("Other")
    await secret("POST", "/contacts", { email: "elsewhere@preview.test", data: { plan: "pro" } }, other.secretKey)
    const theirs = await secret("POST", "/segments", { name: "Theirs", type: "STATIC" }, other.secretKey)
    expect((await preview({ segmentId: theirs.json.id })).status).toBe(404)
    expect((await preview({ condition: plan("pro") }, other.secretKey)).json).toMatchObject({
      total: 1,
      sample: [expect.objectContaining({ email: "elsewhere@preview.test" })]
    })
    expect((await preview({ condition: plan("pro") })).json.total).toBe(4)
  })
})
