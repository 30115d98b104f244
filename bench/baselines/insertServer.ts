/**
 * The baseline of the benchmarks: the simplest server one would write by hand — node:http, a `pg`
 * pool, one INSERT per request, no auth, no validation beyond JSON.parse, no stream, no outbox.
 * Usage: node bench/baselines/insertServer.ts <databaseUrl> (prints `port=<n>` when ready).
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const pool = new pg.Pool({ connectionString: process.argv[2], max: 20 })
await pool.query(`CREATE TABLE IF NOT EXISTS baseline_rows (
  id uuid PRIMARY KEY, email text NOT NULL, name text, data jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", async () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const { rows } = await pool.query(
        "INSERT INTO baseline_rows (id, email, name, data) VALUES ($1, $2, $3, $4) RETURNING id, created_at",
        [randomUUID(), body.email, body.event ?? null, JSON.stringify(body.data ?? {})]
      )
      res.writeHead(body.event ? 200 : 201, { "content-type": "application/json" })
      res.end(JSON.stringify(rows[0]))
    } catch (error) {
      res.writeHead(500)
      res.end(String(error))
    }
  })
})
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  console.log(`port=${typeof address === "object" && address ? address.port : 0}`)
})
