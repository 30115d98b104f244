import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jobCompleted, uploadContacts } from "../support/imports.ts"
import { createStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

// One lane per project: every row of a range goes to the same lane, the worst case for message size.
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", LANES_PER_PROJECT: "1" })
  api = await stack.start("all")
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
})

const importFile = async (text: string) => {
  const accepted = await uploadContacts(api.url, project.secretKey, text)
  expect(accepted.status).toBe(202)
  return jobCompleted(api.url, project.secretKey, accepted.json.jobId, "import", 60_000)
}

describe("an import of rows carrying a lot of data", () => {
  it("sends a range's rows in messages under the stream's payload limit", async () => {
    // 2,400 rows of 2 KB: one range's updates for one lane are ~4.8 MB, past NATS's 1 MiB payload limit.
    const rows = (version: string) =>
      ["email,blob", ...Array.from({ length: 2_400 }, (_, i) => `large${i}@example.com,${version}${"x".repeat(2_000)}`)].join("\n")
    expect((await importFile(rows("a"))).progress).toMatchObject({ processed: 2_400, created: 2_400 })
    expect((await importFile(rows("b"))).progress).toMatchObject({ processed: 2_400, updated: 2_400, failed: 0 })
    const [row] = await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND data->>'blob' LIKE 'b%'",
      [project.id]
    )
    expect(row!.n).toBe(2_400)
    expect(await stack.query("SELECT 1 FROM dead_letters")).toEqual([])
  }, 120_000)
})
