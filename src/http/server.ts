/** Wires the HTTP contract to its handlers, middleware and the Node HTTP server. */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import type { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { AppConfig } from "../config.ts"
import { envelopeBody } from "./api/errors.ts"
import { ServiceUnavailable } from "./api/statusErrors.ts"
import { envelopeFieldsOf } from "./errors.ts"
import { newRequestId } from "./gateway.ts"
import { Api } from "./api/Api.ts"
import { PublicKeyAuthLive, SecretKeyAuthLive } from "./auth.ts"
import { DashboardRoutes } from "./dashboard.ts"
import { GatewayLive } from "./gateway.ts"
import { ContactsHandlers } from "./handlers/contacts.ts"
import { ContactJobsHandlers } from "./handlers/contactJobs.ts"
import { ContactJobs } from "../store/ContactJobs.ts"
import { EventsHandlers } from "./handlers/events.ts"
import { SegmentsHandlers } from "./handlers/segments.ts"
import { Segments } from "../store/Segments.ts"
import { ConditionCheck } from "../store/ConditionCheck.ts"
import { Events } from "../store/Events.ts"
import { SystemHandlers } from "./handlers/system.ts"
import { TrackHandlers } from "./handlers/track.ts"
import { TrackFastPath } from "./trackFastPath.ts"
import { VerifyHandlers } from "./handlers/verify.ts"
import { Verifier } from "../verify/Verifier.ts"
import { CampaignsHandlers } from "./handlers/campaigns.ts"
import { WorkflowsHandlers } from "./handlers/workflows.ts"
import { Workflows } from "../store/Workflows.ts"
import { DomainsHandlers } from "./handlers/domains.ts"
import { DeadLettersHandlers } from "./handlers/deadLetters.ts"
import { DeadLetters } from "../store/DeadLetters.ts"
import { DestinationsHandlers } from "./handlers/destinations.ts"
import { LinksHandlers } from "./handlers/links.ts"
import { SendHandlers } from "./handlers/send.ts"
import { EmailsHandlers } from "./handlers/emails.ts"
import { TemplatesHandlers } from "./handlers/templates.ts"
import { SesWebhookRoute, WebhooksHandlers } from "./handlers/webhooks.ts"
import { Notifications } from "../mail/Notifications.ts"
import { InboundMail } from "../inbound/InboundMail.ts"
import { Billing } from "../store/Billing.ts"
import { ContactDirectory } from "../ingest/ContactDirectory.ts"
import { EventPublisher } from "../ingest/EventPublisher.ts"
import { Idempotency } from "./Idempotency.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { AuthHandlers } from "./handlers/auth.ts"
import { AccountsHandlers } from "./handlers/accounts.ts"
import { BillingWebhookHandlers } from "./handlers/billingWebhook.ts"
import { UploadedFilesHandlers, UploadsHandlers } from "./handlers/uploads.ts"
import { DashboardSessions, SessionAuthLive } from "./session.ts"
import { AccountsLive } from "../accounts/layers.ts"
import { SendMail } from "../mail/SendMail.ts"
import { ActivityHandlers } from "./handlers/activity.ts"
import { AnalyticsHandlers } from "./handlers/analytics.ts"
import { Activity } from "../store/Activity.ts"
import { EmailHistory } from "../store/EmailHistory.ts"
import { Analytics } from "../store/Analytics.ts"
import { LiveHandlers } from "./handlers/live.ts"
import { LiveHub } from "./live/LiveHub.ts"

const ApiRoutes = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([SystemHandlers, TrackHandlers, ContactsHandlers, EventsHandlers, SegmentsHandlers, VerifyHandlers]),
  Layer.provide([SendHandlers, EmailsHandlers, TemplatesHandlers, DomainsHandlers, LinksHandlers, WebhooksHandlers, CampaignsHandlers]),
  Layer.provide([
    WorkflowsHandlers,
    DeadLettersHandlers,
    DestinationsHandlers,
    ContactJobsHandlers,
    ActivityHandlers,
    AnalyticsHandlers,
    LiveHandlers
  ]),
  Layer.provide([AuthHandlers, AccountsHandlers, BillingWebhookHandlers, UploadsHandlers, UploadedFilesHandlers]),
  Layer.provide([SecretKeyAuthLive, PublicKeyAuthLive, SessionAuthLive]),
  Layer.provide(SendMail.layer),
  Layer.provide(DashboardSessions.layer),
  Layer.provide(AccountsLive),
  Layer.provide([
    RateLimiter.layer,
    Idempotency.layer,
    ContactDirectory.layer,
    EventPublisher.layer,
    Events.layer,
    Verifier.layer,
    ConditionCheck.layer.pipe(Layer.provideMerge(Segments.layer)),
    DeadLetters.layer,
    ContactJobs.layer
  ]),
  Layer.provide(Notifications.layer),
  Layer.provide(Workflows.layer),
  Layer.provide(EmailHistory.layer),
  Layer.provide(Activity.layer.pipe(Layer.provideMerge(Analytics.layer))),
  Layer.provide(LiveHub.layer)
)

/**
 * `/docs`, the Scalar page: its routes are built on the first request for it, so the 3 MB script it
 * inlines is loaded then, not by every api process at start whether or not anyone reads the docs.
 */
const DocsRoute = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const scope = yield* Scope.Scope
  const docs = yield* Effect.cached(HttpRouter.toHttpEffect(HttpApiScalar.layer(Api, { path: "/docs" })).pipe(Scope.provide(scope)))
  yield* router.add("GET", "/docs", Effect.flatten(docs))
}))

const Routes = Layer.mergeAll(
  ApiRoutes,
  SesWebhookRoute.pipe(Layer.provide([Notifications.layer, InboundMail.layer.pipe(Layer.provide(Billing.layer))])),
  DocsRoute,
  DashboardRoutes,
  GatewayLive
)

/**
 * The Node server, able to drain: from `drain` on, every answer not yet started closes its connection
 * (`Connection: close`), so keep-alive clients reconnect, to another api process, instead of keeping
 * this one busy until the shutdown cap cuts them off mid-request. A request that arrives while the app
 * is not attached (the moment between the bind and the app's handler, or after the handler is gone at
 * shutdown) is answered 503 with Retry-After at once: with no `request` listener Node would hold it
 * until the client gave up.
 */
export const drainableServer = (fastPath: TrackFastPath["Service"]) =>
  Effect.sync(() => {
    const server = createServer()
    const inFlight = new Set<ServerResponse>()
    let draining = false
    // Every request is offered to /v1/track's fast path, which drains its own (one `close` listener a
    // request, not two); what it declines is counted for draining and goes on to the `request`
    // listeners, the Effect app's among them.
    const emit: EventEmitter["emit"] = server.emit
    server.emit = function(this: Server, event: string | symbol, ...args: Array<unknown>) {
      if (event !== "request") return emit.call(this, event, ...args)
      const [request, response] = args as [IncomingMessage, ServerResponse]
      if (server.listenerCount("request") === 0) return answerNotServing(response)
      if (draining) response.setHeader("connection", "close")
      if (fastPath.take(request, response)) return true
      if (!draining) {
        inFlight.add(response)
        response.once("close", () => inFlight.delete(response))
      }
      return emit.call(this, event, ...args)
    } as typeof server.emit
    const drain = Effect.sync(() => {
      draining = true
      fastPath.drain()
      for (const response of inFlight) if (!response.headersSent) response.setHeader("connection", "close")
    })
    return { server, drain }
  })

const answerNotServing = (response: ServerResponse) => {
  const fields = envelopeFieldsOf(ServiceUnavailable.of("The server is starting or stopping"))
  const body = JSON.stringify(envelopeBody(fields, newRequestId(), new Date()))
  response.writeHead(503, {
    ...fields.headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close"
  })
  response.end(body)
  return true
}

/** The fast path over the same service instances as the HttpApi handlers (layers are shared by reference). */
const TrackFastPathLive = TrackFastPath.layer.pipe(
  Layer.provide([RateLimiter.layer, ContactDirectory.layer, EventPublisher.layer])
)

/**
 * The HTTP server on PORT (0 picks a free port), exposed as `HttpServer` so the CLI announces its address
 * once the whole role is up. The app (every route and its services) is built before the port is bound,
 * so a connection reaches this process only once it can answer; until then the kernel refuses it (or
 * hands it to another api process on the same port). Shutting down, it stops accepting at once, drains
 * keep-alive connections and lets requests in flight finish (10 s at most).
 */
export const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  const { server, drain: drainServer } = yield* drainableServer(yield* TrackFastPath)
  // Live-update streams never end by themselves: they end as draining starts, not at the shutdown cap.
  const drain = Effect.andThen(drainServer, (yield* LiveHub).closeAll)
  const app = yield* HttpRouter.toHttpEffect(Routes)
  // reusePort: several api processes can share PORT, the kernel spreading connections over them.
  const listening = NodeHttpServer.layerServer(() => server, {
    port: config.port,
    host: "0.0.0.0",
    reusePort: config.port !== 0,
    gracefulShutdownTimeout: "10 seconds"
  })
  const serving = HttpServer.serve(app).pipe(Layer.provideMerge(listening))
  // Built after the server, so released before it: draining begins as the server stops accepting.
  return Layer.effectDiscard(Effect.addFinalizer(() => drain)).pipe(Layer.provideMerge(serving))
})).pipe(Layer.provide([TrackFastPathLive, LiveHub.layer]), Layer.provideMerge(NodeHttpServer.layerHttpServices))
