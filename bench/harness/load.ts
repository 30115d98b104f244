/** Load generation with autocannon: POST bodies built per request, at full speed or a fixed rate. */
import autocannon from "autocannon"
import { CONNECTIONS, DURATION } from "./settings.ts"

export interface LoadResult {
  readonly label: string
  readonly requestsPerSecond: number
  /** Responses received in the window. */
  readonly requests: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly non2xx: number
  readonly errors: number
}

export interface LoadOptions {
  readonly headers?: Record<string, string>
  readonly body: (n: number) => unknown
  readonly duration?: number
  /** Requests per second over all connections (default: as fast as possible). */
  readonly rate?: number
  /** Sees every response (keep it cheap: it runs in the load generator). */
  readonly onResponse?: (status: number, body: string) => void
}

export const load = async (label: string, url: string, options: LoadOptions): Promise<LoadResult> => {
  let counter = 0
  const result = await autocannon({
    url,
    method: "POST",
    connections: CONNECTIONS,
    duration: options.duration ?? DURATION,
    ...(options.rate ? { overallRate: options.rate } : {}),
    headers: { "content-type": "application/json", ...options.headers },
    requests: [{
      setupRequest: (request: Record<string, unknown>) => ({ ...request, body: JSON.stringify(options.body(++counter)) }),
      ...(options.onResponse ? { onResponse: options.onResponse } : {})
    }]
  })
  return {
    label,
    requestsPerSecond: Math.round(result.requests.average),
    requests: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors
  }
}
