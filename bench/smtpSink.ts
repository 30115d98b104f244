/**
 * The SMTP server of `npm run bench -- send`: accepts every message (no parsing) and counts arrivals.
 * Prints `smtp=<port> stats=<port>`; GET /stats on the second port answers
 * `{ count, first, last, dkimSigned, times }` (`times`: arrival ms of every message, when asked with ?times=1).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

const times: Array<number> = []
let dkimSigned = 0
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  onData(stream, _session, callback) {
    let head = ""
    stream.on("data", (chunk: Buffer) => {
      if (head.length < 4096) head += chunk.toString("latin1")
    })
    stream.on("end", () => {
      times.push(Date.now())
      if (/^DKIM-Signature:/im.test(head)) dkimSigned++
      callback()
    })
  }
})
await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve))
const stats = createServer((request, response) => {
  const withTimes = request.url?.includes("times=1")
  response.setHeader("content-type", "application/json")
  response.end(JSON.stringify({ count: times.length, first: times[0] ?? null, last: times.at(-1) ?? null, dkimSigned, ...(withTimes ? { times } : {}) }))
})
await new Promise<void>((resolve) => stats.listen(0, "127.0.0.1", resolve))
console.log(`smtp=${(smtp.server.address() as AddressInfo).port} stats=${(stats.address() as AddressInfo).port}`)
process.once("SIGTERM", () => process.exit(0))
