/** The `api` role as a layer: imported by the api process alone (the worker never loads the HTTP handlers). */
import { Layer } from "effect"
import { MetricsServerLive } from "./observability/MetricsServer.ts"
import { HttpLive } from "./http/server.ts"
import { CoreLive } from "./core.ts"
import { InboundMail } from "./inbound/InboundMail.ts"
import { SmtpReceiverLive } from "./inbound/SmtpReceiver.ts"
import { Billing } from "./store/Billing.ts"

/** The inbound SMTP receiver, when INBOUND_SMTP_PORT is set (src/inbound/SmtpReceiver.ts says why the api runs it). */
export const InboundReceiverLive = SmtpReceiverLive.pipe(Layer.provide(InboundMail.layer), Layer.provide(Billing.layer))

/** The HTTP api, and /metrics on METRICS_PORT instead of PORT when that is set; the inbound SMTP receiver. */
export const ApiRoleLive = Layer.mergeAll(HttpLive, MetricsServerLive, InboundReceiverLive).pipe(Layer.provideMerge(CoreLive))
