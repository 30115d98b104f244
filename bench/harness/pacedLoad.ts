/**
 * Open-loop load at an even rate: every TICK_MS the generator sends as many requests as the rate owes by
 * then, whatever the earlier ones are doing, over up to CONNECTIONS keep-alive connections.
 *
 * Why not autocannon's `overallRate`: it gives each connection a budget per second, which the connection
 * spends as fast as answers come and then waits for the next second. At 1,500 requests/s over 50
 * connections (30 each) with millisecond answers, the whole second's requests arrive in its first few tens
 * of milliseconds: a burst at many times the rate, once a second, and an event tracked just after it waits
 * behind the whole burst. A latency measured beside that load measures the burst, not the rate.
 *
 * A request's latency runs from when it was due, not when it went out, so a generator or a server that
 * falls behind shows in the figures (no coordinated omission).
 */
import http from "node:http"
import type { LoadOptions, LoadResult } from "./load.ts"
import { percentile } from "./stats.ts"
import { CONNECTIONS, DURATION, sleep } from "./settings.ts"

const TICK_MS = 5
/** Requests in flight past which the generator stops sending: the server has stopped answering. */
const MAX_IN_FLIGHT = 20_000

export const pacedLoad = async (label: string, url: string, options: LoadOptions & { readonly rate: number }): Promise<LoadResult> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const target = new URL(url)
  const seconds = options.duration ?? DURATION
  const headers = { "content-type": "application/json", ...options.headers }
  const latencies: Array<number> = []
  let counter = 0
  let inFlight = 0
  let non2xx = 0
  let errors = 0

  const send = (dueAt: number) => {
    inFlight++
    const body = JSON.stringify(options.body(++counter))
    const request = http.request(
      target,
      { method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          inFlight--
          latencies.push(performance.now() - dueAt)
          const status = response.statusCode ?? 0
          if (status < 200 || status >= 300) non2xx++
          options.onResponse?.(status, Buffer.concat(chunks).toString())
        })
      }
    )
    request.on("error", () => {
      inFlight--
      errors++
    })
    request.end(body)
  }

  const started = performance.now()
  const interval = 1000 / options.rate
  let sent = 0
  while (performance.now() - started < seconds * 1000) {
    const due = Math.min(Math.floor((performance.now() - started) / interval), Math.floor(seconds * options.rate))
    while (sent < due && inFlight < MAX_IN_FLIGHT) send(started + sent++ * interval)
    await sleep(TICK_MS)
  }
  // The answers still owed, up to 10 s.
  const deadline = performance.now() + 10_000
  while (inFlight > 0 && performance.now() < deadline) await sleep(TICK_MS)
  agent.destroy()
  const sorted = latencies.sort((a, b) => a - b)
  return {
    label,
    requestsPerSecond: Math.round(latencies.length / seconds),
    requests: latencies.length,
    latencyP50Ms: Math.round(percentile(sorted, 50) * 10) / 10,
    latencyP99Ms: Math.round(percentile(sorted, 99) * 10) / 10,
    non2xx,
    errors
  }
}
