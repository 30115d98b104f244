/**
 * Baseline for `npm run bench -- contacts`: the simplest server one would write by hand — node:http,
 * a `pg` pool, one INSERT per request, no auth, no validation beyond JSON.parse, no outbox.
 * Usage: node bench/baselines/contactsInsertServer.ts <databaseUrl> (prints `port=<n>` when ready).
 */
import { createServer } from "node:http"
import { randomUUID } from "node:crypto"
import pg from "pg"

const pool = new pg.Pool({ connectionString: process.argv[2], max: 20 })
await pool.query(`CREATE TABLE IF NOT EXISTS baseline_contacts (
  id uuid PRIMARY KEY, email text NOT NULL UNIQUE, data jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", async () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const { rows } = await pool.query(
        "INSERT INTO baseline_contacts (id, email, data) VALUES ($1, $2, $3) RETURNING id, email, data, created_at",
        [randomUUID(), body.email, JSON.stringify(body.data ?? {})]
      )
      res.writeHead(201, { "content-type": "application/json" })
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
