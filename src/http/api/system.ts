import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("config", "/config", {
      success: Schema.Struct({
        features: Schema.Record(Schema.String, Schema.Boolean),
        version: Schema.String
      })
    }),
    HttpApiEndpoint.get("healthz", "/healthz", { success: Schema.Struct({ status: Schema.Literal("ok") }) }),
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: Schema.Struct({ status: Schema.String, postgres: Schema.Boolean, nats: Schema.Boolean })
    }),
    HttpApiEndpoint.get("metrics", "/metrics", {
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain; version=0.0.4" }))
    }).annotate(OpenApi.Description, "Prometheus metrics of this process (partition lag, actors, batches, events applied)")
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Configuration, liveness and readiness (no key)" }))
{}
