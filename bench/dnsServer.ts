/**
 * The DNS server of `npm run bench -- verify`: test/support/dns.ts in a process of its own, answering
 * every name under warm.bench.test and cold.bench.test with NS, MX, A and AAAA. Prints `port=<n>`.
 */
import { startDnsServer } from "../test/support/dns.ts"

const zone = {
  NS: ["ns1.bench.test"],
  MX: [{ exchange: "mx.bench.test", priority: 10 }],
  A: ["192.0.2.1"],
  AAAA: ["2001:db8::1"]
}
const server = await startDnsServer({ "*.warm.bench.test": zone, "*.cold.bench.test": zone })
// The query log would only grow here.
setInterval(() => server.queries.splice(0), 1000).unref()
console.log(`port=${server.port}`)
process.once("SIGTERM", () => void server.close().then(() => process.exit(0)))
