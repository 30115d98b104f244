/**
 * Inbound delivery notifications: the generic JSON format (secret key) and Amazon SES over SNS
 * (signature-verified, from the topics SES_TOPIC_ARNS accepts; a plain route because SNS posts JSON as
 * text/plain). An SES notification acts only on the project of the email its Message-ID names.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig, type AppConfigShape } from "../../config.ts"
import { type Notification, Notifications } from "../../mail/Notifications.ts"
import {
  isSnsUrl,
  parseSnsMessage,
  sesNotification,
  type SesReceived,
  sesReceived,
  topicRefusal,
  verifySnsMessage
} from "../../mail/sns.ts"
import { InboundMail } from "../../inbound/InboundMail.ts"
import { parseInbound } from "../../inbound/message.ts"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { envelopeResponse, rendered, RequestState } from "../errors.ts"

export const WebhooksHandlers = HttpApiBuilder.group(
  Api,
  "webhooks",
  Effect.fnUntraced(function*(handlers) {
    const notifications = yield* Notifications
    const relay = yield* OutboxRelay
    return handlers.handle("generic", ({ payload }) =>
      rendered(Effect.gen(function*() {
        const project = yield* CurrentProject
        const items = Array.isArray(payload) ? payload : [payload]
        const counts = { applied: 0, duplicates: 0, unknown: 0 }
        for (const item of items) {
          const notification: Notification = item.type === "delivered"
            ? { id: item.id, kind: "delivery", messageId: item.messageId }
            : item.type === "complained"
            ? { id: item.id, kind: "complaint", messageId: item.messageId }
            : { id: item.id, kind: "bounce", messageId: item.messageId, bounceType: item.bounceType === "soft" ? "Transient" : "Permanent" }
          const outcome = yield* notifications.apply("generic", notification, project.id)
          if (outcome === "applied") counts.applied++
          else if (outcome === "duplicate") counts.duplicates++
          else counts.unknown++
        }
        yield* relay.wake
        return { success: true as const, data: counts }
      })))
  })
)

/** POST /webhooks/ses: SNS notifications carrying SES bounce, complaint and delivery notifications. */
export const SesWebhookRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const notifications = yield* Notifications
    const relay = yield* OutboxRelay
    const inbound = yield* InboundMail
    yield* router.add("POST", "/webhooks/ses", (request) => handleSes(request, { config, notifications, relay, inbound }))
  })
)

const handleSes = (
  request: HttpServerRequest.HttpServerRequest,
  services: {
    readonly config: AppConfigShape
    readonly notifications: Notifications["Service"]
    readonly relay: OutboxRelay["Service"]
    readonly inbound: InboundMail["Service"]
  }
) =>
  Effect.gen(function*() {
    const { config, notifications, relay, inbound } = services
    const state = yield* RequestState
    const refuse = (message: string, status = 400, code = status === 403 ? "INVALID_SIGNATURE" : "BAD_REQUEST") =>
      envelopeResponse({ status, code, message }, state.requestId)
    // A body over the gateway's limit (256 KiB here) fails the read; the gateway answers 413.
    const body = yield* request.text
    const message = parseSnsMessage(body)
    if (typeof message === "string") return refuse(message)
    // The topic first: an unaccepted one costs no certificate fetch and is never confirmed or applied.
    const refusedTopic = topicRefusal(config.sesTopicArns, message.TopicArn)
    if (refusedTopic) return refuse(refusedTopic, 403, "TOPIC_NOT_ACCEPTED")
    const invalid = yield* Effect.promise(() => verifySnsMessage(message, config.snsSigningCertFile))
    if (invalid) return refuse(`The SNS message is not authentic: ${invalid}`, 403)
    if (message.Type === "SubscriptionConfirmation") {
      // Confirming means visiting SubscribeURL, which must be SNS's own.
      const url = message.SubscribeURL ?? ""
      if (!isSnsUrl(url)) return refuse("SubscribeURL is not an SNS URL")
      yield* Effect.tryPromise(() => fetch(url, { redirect: "error", signal: AbortSignal.timeout(5_000) })).pipe(
        Effect.tap(() => Effect.logInfo("SNS subscription confirmed", { topic: message.TopicArn })),
        Effect.tapCause((cause) => Effect.logWarning("SNS subscription confirmation failed", cause)),
        Effect.ignore
      )
      return HttpServerResponse.jsonUnsafe({ success: true, data: { confirmed: message.TopicArn } })
    }
    if (message.Type !== "Notification") return HttpServerResponse.jsonUnsafe({ success: true, data: { ignored: message.Type } })
    const received = sesReceived(message.Message)
    if (received) {
      const recorded = yield* rendered(receiveFromSes(inbound, received))
      return HttpServerResponse.jsonUnsafe({ success: true, data: { received: recorded } })
    }
    const notification = sesNotification(message.MessageId, message.Message)
    if (!notification) return HttpServerResponse.jsonUnsafe({ success: true, data: { ignored: "not a tracked SES notification" } })
    const outcome = yield* rendered(notifications.apply("ses", notification))
    yield* relay.wake
    return HttpServerResponse.jsonUnsafe({ success: true, data: { outcome } })
  })

/**
 * Mail SES received (its receipt notification): recorded like mail our SMTP receiver accepts, for each
 * project that verified a recipient's domain, with SES's SPF, DKIM and DMARC verdicts. Recipients at
 * other domains are ignored. Answers how many projects recorded it (a repeat of the notification: 0).
 */
const receiveFromSes = (inbound: InboundMail["Service"], received: SesReceived) =>
  Effect.gen(function*() {
    const message = yield* Effect.promise(() => parseInbound(received.raw))
    const source = received.source !== undefined && isValidEmail(received.source) ? normalizeEmail(received.source) : undefined
    const sender = message.from ?? source
    if (sender === undefined) return 0
    const byProject = new Map<string, Array<string>>()
    for (const recipient of received.recipients) {
      if (!isValidEmail(recipient)) continue
      for (const projectId of yield* inbound.projectsOf(recipient.slice(recipient.lastIndexOf("@") + 1).toLowerCase())) {
        byProject.set(projectId, [...(byProject.get(projectId) ?? []), normalizeEmail(recipient)])
      }
    }
    let recorded = 0
    for (const [projectId, recipients] of byProject) {
      const outcome = yield* inbound.record({
        projectId,
        recipients,
        sender,
        message,
        authentication: { ...received.verdicts, dkimDomains: [] },
        raw: received.complete ? received.raw : undefined,
        via: "ses"
      }).pipe(Effect.catchTag("BillingLimitExceeded", () => Effect.succeed({ _tag: "Duplicate" } as const)))
      if (outcome._tag === "Recorded") recorded++
    }
    return recorded
  })
