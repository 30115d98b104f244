/** /metrics for a process without the HTTP api (a standalone worker), on METRICS_PORT when set. */
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AppConfig } from "../config.ts"
import { metricsContentType, renderPrometheus } from "./Metrics.ts"

export const MetricsServerLive = Layer.effectDiscard(Effect.gen(function*() {
  const port = (yield* AppConfig).metricsPort
  if (port === undefined) return
  const server = createServer((request, response) => {
    if (request.url !== "/metrics") {
      response.writeHead(404).end()
      return
    }
    renderPrometheus().then(
      (text) => response.writeHead(200, { "content-type": metricsContentType }).end(text),
      () => response.writeHead(500).end()
    )
  })
  yield* Effect.acquireRelease(
    Effect.callback<void>((resume) => {
      server.listen(port, "0.0.0.0", () => resume(Effect.void))
    }),
    () => Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
  )
  yield* Effect.logInfo("metrics on /metrics", { port })
}))
