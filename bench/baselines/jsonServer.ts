/**
 * The floor of an HTTP JSON API: node:http reading a JSON POST body, parsing it and answering JSON, with
 * no database, no stream and no checks. What the api's CPU per /v1/track request is held against (issue
 * 35: at most 2× this floor).
 * Usage: node bench/baselines/jsonServer.ts (prints `port=<n>` when ready).
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const answer = JSON.stringify({
        success: true,
        data: { contact: randomUUID(), event: randomUUID(), email: body.email, timestamp: new Date().toISOString() }
      })
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
      res.end(answer)
    } catch (error) {
      res.writeHead(400)
      res.end(String(error))
    }
  })
})
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  console.log(`port=${typeof address === "object" && address ? address.port : 0}`)
})
