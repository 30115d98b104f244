import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { renderPrometheus } from "../../observability/Metrics.ts"
import { FORWARDING_HEADERS, metricsAccess, metricsRefusal } from "../../observability/metricsAccess.ts"
import { Nats } from "../../stream/Nats.ts"
import { OAuth } from "../../accounts/OAuth.ts"
import { StripeBilling } from "../../accounts/StripeBilling.ts"
import { AppConfig } from "../../config.ts"
import { deliveryMode, requiresVerifiedDomain } from "../../domain/delivery.ts"
import { Api } from "../api/Api.ts"
import { rendered } from "../errors.ts"
import { Forbidden, NotFound, Unauthorized } from "../api/statusErrors.ts"

export const SystemHandlers = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fnUntraced(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    const nats = yield* Nats
    const config = yield* AppConfig
    const oauth = yield* OAuth
    const billing = (yield* StripeBilling).enabled !== undefined
    const metricsAllowed = metricsAccess(config.metricsToken)
    const probe = <A, E>(effect: Effect.Effect<A, E>) =>
      effect.pipe(Effect.timeout("2 seconds"), Effect.as(true), Effect.orElseSucceed(() => false))
    return handlers
      .handle("config", () =>
        Effect.succeed({
          features: { tracking: true, contacts: true, signups: !config.disableSignups, billing, oauth: oauth.providers.length > 0 },
          signupsEnabled: !config.disableSignups,
          emailVerificationRequired: config.requireEmailVerification,
          emailVerificationPossible: config.smtpUrl !== undefined,
          oauthProviders: oauth.providers.map((provider) => provider.id),
          billing,
          trackingDefault: true,
          delivery: { mode: deliveryMode(config), verifiedDomainRequired: requiresVerifiedDomain(config) },
          version: "0.1.0"
        }))
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("metrics", () =>
        rendered(Effect.gen(function*() {
          if (config.metricsPort !== undefined) return yield* NotFound.of("Metrics (served on METRICS_PORT)")
          const request = yield* HttpServerRequest.HttpServerRequest
          const access = metricsAllowed({
            authorization: request.headers.authorization,
            forwarded: FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined),
            peer: Option.getOrUndefined(request.remoteAddress)
          })
          if (access !== "allowed") {
            const { code, message } = metricsRefusal[access]
            return yield* access === "unauthorized"
              ? new Unauthorized({ code, message, headers: { "www-authenticate": "Bearer" } })
              : new Forbidden({ code, message })
          }
          return yield* Effect.promise(renderPrometheus)
        })))
      .handle("readyz", () =>
        Effect.gen(function*() {
          const [postgres, natsUp] = yield* Effect.all([
            probe(sql`SELECT 1`),
            // Connected, and JetStream can store: a full store (the account's storage limit reached) refuses
            // every publish while the connection itself is fine; one that answers nothing times out here.
            probe(Effect.tryPromise(async () => {
              await nats.connection.flush()
              const account = await nats.jsm.getAccountInfo()
              if (account.limits.max_storage >= 0 && account.storage >= account.limits.max_storage) throw new Error("JetStream store full")
            }))
          ], { concurrency: 2 })
          const ready = postgres && natsUp
          // 503 when a dependency is down, so load balancers stop routing here.
          return HttpServerResponse.jsonUnsafe(
            { status: ready ? "ready" : "unavailable", postgres, nats: natsUp },
            { status: ready ? 200 : 503 }
          )
        }))
  })
)
