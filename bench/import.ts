/**
 * `npm run bench -- import`: a CSV file of just under 5 MB (BENCH_IMPORT_ROWS rows, default as many as fit,
 * about 50,000, with 6 data columns) from `POST /contacts/import` to the job's `COMPLETED`, api and worker
 * as separate processes: rows per second, and the worker's resident memory sampled through the run (it
 * should stay flat: the file is read in parts). Baseline, same run: the same file loaded by `COPY` into
 * a bare table (no indexes, text columns), Postgres reading it itself: the physical floor here.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { withEnvironment } from "./harness/environment.ts"
import { rssBytes } from "./harness/proc.ts"
import { setting, sleep } from "./harness/settings.ts"
import { ratio, round } from "./harness/stats.ts"

const MAX_BYTES = 5 * 1024 * 1024
const COUNTRIES = ["FR", "DE", "NO", "US", "BR", "JP", "IN", "NG"]

/** The file: email + 6 data columns (string, number, boolean, date, string, number), under 5 MB. */
const makeFile = (limitRows: number) => {
  const lines = ["email,first_name,seats,trial,signed_up_at,country,score"]
  let bytes = lines[0]!.length + 1
  for (let i = 0; i < limitRows; i++) {
    const day = String(1 + (i % 28)).padStart(2, "0")
    const line = `user${i}.bench@example-company${i % 1000}.org,Firstname${i % 5000},${1 + (i % 50)},${i % 2 === 0},` +
      `2024-03-${day}T10:${String(i % 60).padStart(2, "0")}:00Z,${COUNTRIES[i % COUNTRIES.length]},${(i % 1000) / 10}`
    if (bytes + line.length + 1 > MAX_BYTES) break
    lines.push(line)
    bytes += line.length + 1
  }
  return { text: lines.join("\n") + "\n", rows: lines.length - 1 }
}

export const run = () =>
  withEnvironment(async (env) => {
    const file = makeFile(setting("BENCH_IMPORT_ROWS", 1_000_000))
    const api = await env.start("api")
    const worker = await env.start("worker", { METRICS_PORT: "0" })
    const auth = { authorization: `Bearer ${env.project.secretKey}` }
    // Warm both processes (connections, first stream messages) on a small import first.
    const warm = new FormData()
    warm.append("file", new Blob(["email,seats\nwarm@example.com,1\n"], { type: "text/csv" }), "warm.csv")
    const warmJob = (await (await fetch(`${api.url}/contacts/import`, { method: "POST", headers: auth, body: warm })).json()) as {
      jobId: string
    }
    for (;;) {
      const job = await (await fetch(`${api.url}/contacts/import/${warmJob.jobId}`, { headers: auth })).json() as { status: string }
      if (job.status === "COMPLETED") break
      await sleep(100)
    }

    const rss: Array<{ processed: number; rssMiB: number }> = []
    const sampleRss = (processed: number) => rss.push({ processed, rssMiB: Math.round(rssBytes(worker.process.pid!) / 2 ** 20) })
    sampleRss(0)
    const form = new FormData()
    form.append("file", new Blob([file.text], { type: "text/csv" }), "contacts.csv")
    const started = performance.now()
    const response = await fetch(`${api.url}/contacts/import`, { method: "POST", headers: auth, body: form })
    const accepted = (await response.json()) as { jobId: string }
    if (response.status !== 202) throw new Error(`import refused: ${response.status} ${JSON.stringify(accepted)}`)
    const acceptedAfter = (performance.now() - started) / 1000
    let job: { status: string; progress: Record<string, number>; startedAt: string; finishedAt: string }
    for (;;) {
      job = await (await fetch(`${api.url}/contacts/import/${accepted.jobId}`, { headers: auth })).json() as typeof job
      sampleRss(job.progress.processed ?? 0)
      if (job.status === "COMPLETED" || job.status === "FAILED") break
      if (performance.now() - started > 600_000) throw new Error(`import not done after 10 minutes: ${JSON.stringify(job)}`)
      await sleep(50)
    }
    const seconds = (performance.now() - started) / 1000
    if (job.status !== "COMPLETED" || job.progress.created !== file.rows) throw new Error(`import ended ${JSON.stringify(job)}`)

    // Baseline: the same bytes, COPY into a bare table by Postgres itself (the server reads the file).
    const dir = mkdtempSync(join(tmpdir(), "bench-import-"))
    const path = join(dir, "contacts.csv")
    writeFileSync(path, file.text)
    chmodSync(dir, 0o755)
    chmodSync(path, 0o644)
    let copySeconds: number
    try {
      await env.query(
        "CREATE TABLE bench_copy (email text, first_name text, seats text, trial text, signed_up_at text, country text, score text)"
      )
      const copyStarted = performance.now()
      await env.query(`COPY bench_copy FROM '${path}' WITH (FORMAT csv, HEADER true)`)
      copySeconds = (performance.now() - copyStarted) / 1000
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    const service = {
      rows: file.rows,
      fileBytes: Buffer.byteLength(file.text),
      acceptedSeconds: round(acceptedAfter, 3),
      completedSeconds: round(seconds, 2),
      rowsPerSecond: Math.round(file.rows / seconds),
      workerRssMiB: {
        start: rss[0]!.rssMiB,
        at50Percent: rss.find((s) => s.processed >= file.rows / 2)?.rssMiB ?? null,
        peak: Math.max(...rss.map((s) => s.rssMiB)),
        end: rss[rss.length - 1]!.rssMiB
      }
    }
    const baseline = { copySeconds: round(copySeconds, 3), rowsPerSecond: Math.round(file.rows / copySeconds) }
    return {
      description: "POST /contacts/import of a ~5 MB CSV (6 data columns) to COMPLETED (api and worker processes), rows/s and " +
        "the worker's RSS; baseline: the same file COPY'd by Postgres into a bare table",
      service,
      baseline,
      ratio: ratio(service.rowsPerSecond, baseline.rowsPerSecond)
    }
  })
