import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"

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
    })
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Configuration, liveness and readiness (no key)" }))
{}
