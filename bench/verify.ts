/**
 * `npm run bench -- verify`: POST /v1/verify against a DNS server in its own process
 * (bench/dnsServer.ts). Warm: 100 domains, cached after the warm-up, so no DNS per request. Cold: a new
 * domain every request, so four lookups (NS, MX, A, AAAA) per verification. No-DNS: malformed
 * addresses, the endpoint without lookups.
 */
import { withEnvironment } from "./harness/environment.ts"
import { load } from "./harness/load.ts"

export const run = () =>
  withEnvironment(async (env) => {
    const dns = await env.helper(["bench/dnsServer.ts"], /port=(\d+)/)
    const api = await env.start("api", { DNS_SERVERS: `127.0.0.1:${dns.match[1]}` })
    const url = `${api.url}/v1/verify`
    const headers = { authorization: `Bearer ${env.project.secretKey}` }
    // Every answer is checked for an unanswered lookup: a fast result made of timeouts would be no result.
    let timedOut = 0
    let invalid = 0
    const onResponse = (_status: number, body: string) => {
      if (body.includes("timed out")) timedOut++
      if (!body.includes('"valid":true')) invalid++
    }
    const warmBody = (n: number) => ({ email: `user${n}@d${n % 100}.warm.bench.test` })
    await load("warmup", url, { body: warmBody, headers, duration: 3 })
    const warm = await load("warm", url, { body: warmBody, headers, onResponse })
    const warmCheck = { timedOut, invalid }
    timedOut = invalid = 0
    const cold = await load("cold", url, { body: (n) => ({ email: `user@d${n}.cold.bench.test` }), headers, onResponse })
    const coldCheck = { timedOut, invalid }
    const noDns = await load("no-dns", url, { body: (n) => ({ email: `not-an-address-${n}` }), headers })
    return {
      description:
        "POST /v1/verify: warm DNS cache (100 domains), cold (a new domain per request: NS+MX+A+AAAA), and malformed addresses (no DNS)",
      warm: { ...warm, ...warmCheck },
      cold: { ...cold, ...coldCheck, dnsQueriesPerSecond: cold.requestsPerSecond * 4 },
      noDns
    }
  })
