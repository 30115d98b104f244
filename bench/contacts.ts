/** `npm run bench -- contacts`: POST /contacts (a new email per request) vs the bare INSERT server. */
import { withEnvironment } from "./harness/environment.ts"
import { load } from "./harness/load.ts"
import { ratio } from "./harness/stats.ts"

export const run = () =>
  withEnvironment(async (env) => {
    const { url: baselineUrl } = await env.baseline()
    const { url } = await env.start("all")
    const body = (label: string) => (n: number) => ({ email: `${label}-${n}@bench.test`, data: { plan: "pro", n } })
    const auth = { authorization: `Bearer ${env.project.secretKey}` }
    // Warm both up (JIT, pools, caches), then measure.
    await load("warmup", baselineUrl, { body: body("wb"), duration: 3 })
    await load("warmup", `${url}/contacts`, { body: body("ws"), headers: auth, duration: 3 })
    const baseline = await load("baseline", baselineUrl, { body: body("b") })
    const service = await load("service", `${url}/contacts`, { body: body("s"), headers: auth })
    return {
      description: "POST /contacts (new email per request) vs a bare node:http + pg server doing one INSERT per request",
      baseline,
      service,
      ratio: ratio(service.requestsPerSecond, baseline.requestsPerSecond)
    }
  })
