import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ErrorDocs, serverErrors } from "./errors.ts"

const Readiness = Schema.Struct({ status: Schema.String, postgres: Schema.Boolean, nats: Schema.Boolean })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("config", "/config", {
      success: Schema.Struct({
        features: Schema.Record(Schema.String, Schema.Boolean),
        signupsEnabled: Schema.Boolean.annotate({ description: "false when DISABLE_SIGNUPS is set (the first user can still sign up)" }),
        emailVerificationRequired: Schema.Boolean,
        emailVerificationPossible: Schema.Boolean.annotate({
          description:
            "A verification mail can reach its user: the platform's mail goes out through SMTP_URL (without it, it is only written to the file outbox)"
        }),
        oauthProviders: Schema.Array(Schema.Literals(["github", "google"])),
        billing: Schema.Boolean.annotate({ description: "Stripe checkout, portal and invoices are available" }),
        trackingDefault: Schema.Boolean.annotate({ description: "Whether new projects track opens and clicks" }),
        delivery: Schema.Struct({
          mode: Schema.Literals(["local", "smtp"]).annotate({
            description: "local: no SMTP_URL, mail is written to the file outbox and never leaves the machine (read it on the " +
              "dashboard's Emails page); smtp: mail goes to the configured relay"
          }),
          verifiedDomainRequired: Schema.Boolean.annotate({
            description: "Whether templates, campaigns and /v1/send need the sender's domain verified (403 otherwise): only with a relay"
          })
        }),
        version: Schema.String
      }),
      error: serverErrors
    }),
    HttpApiEndpoint.get("healthz", "/healthz", { success: Schema.Struct({ status: Schema.Literal("ok") }), error: serverErrors }),
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: Readiness,
      error: [
        Readiness.annotate({ identifier: "NotReady", description: "Postgres or NATS is unreachable (the same body, status unavailable)" })
          .pipe(HttpApiSchema.status(503)),
        ...serverErrors
      ]
    }),
    HttpApiEndpoint.get("metrics", "/metrics", {
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain; version=0.0.4" })),
      error: [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.notFound, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Prometheus metrics of this process (partition lag, actors, batches, events applied). With METRICS_TOKEN set, only " +
        "with Authorization: Bearer <token> (401 INVALID_METRICS_TOKEN); without, only for requests made directly from a " +
        "loopback or private address, not through a proxy (403 METRICS_NOT_PUBLIC). With METRICS_PORT set, served there " +
        "instead (404 here)."
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Configuration, liveness and readiness (no key)" }))
{}
