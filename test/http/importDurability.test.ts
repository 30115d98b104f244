import { describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { jobCompleted, uploadContacts } from "../support/imports.ts"
import { request, type StackContext, withStack } from "../support/stack.ts"

// An api and a separate worker, so the worker can be killed in the middle of an import.
let context: StackContext
withStack("api", (ready) => (context = ready))

describe("a worker killed mid-import", () => {
  it("resumes at the job's cursor on the next worker, and applies no row twice", async () => {
    const { stack, api, project } = context
    const rows = 60_000
    const lines = ["email,plan,score,city"]
    for (let i = 0; i < rows; i++) lines.push(`kill${i}@example.com,${i % 3 === 0 ? "pro" : "free"},${i},City ${i % 97}`)
    const accepted = await uploadContacts(api.url, project.secretKey, lines.join("\n"))
    expect(accepted.status).toBe(202)
    const jobId: string = accepted.json.jobId

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
      const job = await jobCompleted(api.url, project.secretKey, jobId, "import", 90_000)
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
