/**
 * /metrics on METRICS_PORT when set: a standalone worker's only HTTP port, or where an api (every api
 * process of `all`, sharing the port) serves its metrics instead of on PORT. The same access rule as on
 * PORT (metricsAccess.ts); `/healthz` answers without it, for container health checks.
 */
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AppConfig } from "../config.ts"
import { metricsContentType, renderPrometheus } from "./Metrics.ts"
import { FORWARDING_HEADERS, metricsAccess, metricsRefusal } from "./metricsAccess.ts"

export const MetricsServerLive = Layer.effectDiscard(Effect.gen(function*() {
  const { metricsPort: port, metricsToken } = yield* AppConfig
  if (port === undefined) return
  const allowed = metricsAccess(metricsToken)
  const server = createServer((request, response) => {
    if (request.url === "/healthz") {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok" }))
      return
    }
    if (request.url !== "/metrics") {
      response.writeHead(404).end()
      return
    }
    const access = allowed({
      authorization: request.headers.authorization,
      forwarded: FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined),
      peer: request.socket.remoteAddress
    })
    if (access !== "allowed") {
      const refusal = metricsRefusal[access]
      response.writeHead(refusal.status, {
        "content-type": "text/plain; charset=utf-8",
        ...(access === "unauthorized" ? { "www-authenticate": "Bearer" } : {})
      }).end(`${refusal.code}: ${refusal.message}\n`)
      return
    }
    renderPrometheus().then(
      (text) => response.writeHead(200, { "content-type": metricsContentType }).end(text),
      () => response.writeHead(500).end()
    )
  })
  yield* Effect.acquireRelease(
    Effect.callback<void>((resume) => {
      // reusePort: the api processes of `all` share it, as they share PORT.
      server.listen({ port, host: "0.0.0.0", reusePort: port !== 0 }, () => resume(Effect.void))
    }),
    () =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )
  yield* Effect.logInfo("metrics on /metrics", { port })
}))
