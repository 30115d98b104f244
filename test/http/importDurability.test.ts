import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

// An api and a separate worker, so the worker can be killed in the middle of an import.
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("api")
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
})

describe("a worker killed mid-import", () => {
  it("resumes at the job's cursor on the next worker, and applies no row twice", async () => {
    const rows = 60_000
    const lines = ["email,plan,score,city"]
    for (let i = 0; i < rows; i++) lines.push(`kill${i}@example.com,${i % 3 === 0 ? "pro" : "free"},${i},City ${i % 97}`)
    const form = new FormData()
    form.append("file", new Blob([lines.join("\n")], { type: "text/csv" }), "big.csv")
    const accepted = await fetch(`${api.url}/contacts/import`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.secretKey}` },
      body: form
    })
    expect(accepted.status).toBe(202)
    const { jobId } = await accepted.json() as { jobId: string }

    let worker = await stack.start("worker", { METRICS_PORT: "0" })
    // Kill it as soon as the first ranges of the file are read and handed over, before the last.
    const readAtKill = await eventually(async () => {
      const [ranges] = await stack.query<{ read: number; all: number }>(
        "SELECT count(read_at)::int AS read, count(*)::int AS all FROM contact_job_ranges WHERE job_id = $1",
        [jobId]
      )
      expect(ranges!.read).toBeGreaterThan(0)
      return ranges!
    }, 30_000)
    await worker.stop("SIGKILL")
    expect(readAtKill.read).toBeLessThan(readAtKill.all)
    const progress = await request(api.url, "GET", `/contacts/import/${jobId}`, { key: project.secretKey })
    expect(progress.json.status).toBe("RUNNING")

    worker = await stack.start("worker", { METRICS_PORT: "0" })
    try {
      const job = await eventually(async () => {
        const answer = await request(api.url, "GET", `/contacts/import/${jobId}`, { key: project.secretKey })
        expect(answer.json.status).toBe("COMPLETED")
        return answer.json
      }, 90_000)
      // Every row handed over once: created when read, never seen again as an update of an existing contact.
      expect(job.progress).toEqual({ processed: rows, total: rows, created: rows, updated: 0, skipped: 0, failed: 0 })
      const [counts] = await stack.query<{ n: number; emails: number }>(
        "SELECT count(*)::int AS n, count(DISTINCT email)::int AS emails FROM contacts WHERE project_id = $1",
        [project.id]
      )
      expect(counts).toEqual({ n: rows, emails: rows })
      const [sample] = await stack.query<{ data: unknown }>(
        "SELECT data FROM contacts WHERE project_id = $1 AND email = 'kill59999@example.com'",
        [project.id]
      )
      expect(sample!.data).toEqual({ plan: "free", score: 59999, city: "City 53" })
      // The file is dropped once fully read.
      expect(await stack.query("SELECT 1 FROM contact_job_parts WHERE job_id = $1", [jobId])).toEqual([])
    } finally {
      await worker.stop()
    }
  }, 150_000)
})
