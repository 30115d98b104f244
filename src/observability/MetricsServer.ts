/** /metrics for a process without the HTTP api (a standalone worker), on METRICS_PORT when set. */
import { Config, Effect, Layer, Option } from "effect"
import { createServer } from "node:http"
import { metricsContentType, renderPrometheus } from "./Metrics.ts"

export const MetricsServerLive = Layer.effectDiscard(Effect.gen(function*() {
  const port = yield* Config.option(Config.Int("METRICS_PORT"))
  if (Option.isNone(port)) return
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
      server.listen(port.value, "0.0.0.0", () => resume(Effect.void))
    }),
    () => Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
  )
  yield* Effect.logInfo("metrics on /metrics", { port: port.value })
}))
