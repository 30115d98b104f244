/**
 * The SMTP server of the mail benchmarks: test/support/smtp.ts's sink in a process of its own, counting
 * only (no parsing), so it does not share the runner's event loop. Prints `smtp=<port> stats=<port>`;
 * GET /stats on the second port answers `{ count, first, last, dkimSigned, times }` (`times`: arrival ms
 * of every message, when asked with ?times=1).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { startSmtpSink } from "../test/support/smtp.ts"

const sink = await startSmtpSink({ parse: false })
const times = sink.arrivals
const stats = createServer((request, response) => {
  const withTimes = request.url?.includes("times=1")
  response.setHeader("content-type", "application/json")
  response.end(JSON.stringify({
    count: times.length,
    first: times[0] ?? null,
    last: times.at(-1) ?? null,
    dkimSigned: sink.dkimSigned(),
    ...(withTimes ? { times } : {})
  }))
})
await new Promise<void>((resolve) => stats.listen(0, "127.0.0.1", resolve))
console.log(`smtp=${sink.port} stats=${(stats.address() as AddressInfo).port}`)
process.once("SIGTERM", () => process.exit(0))
