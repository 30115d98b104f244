/**
 * The platform's own mail to people (email verification, password reset, invitations), sent from
 * PLATFORM_FROM through the same transport as every other message: SMTP_URL, or the file outbox.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { MailTransport } from "../mail/Transport.ts"

export interface PlatformMessage {
  readonly to: string
  readonly subject: string
  /** Plain text; the link is on a line of its own. */
  readonly text: string
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!)

export class PlatformMail extends Context.Service<PlatformMail, {
  readonly send: (message: PlatformMessage) => Effect.Effect<void>
  /** A link into the dashboard under PUBLIC_URL. */
  readonly link: (path: string, token: string) => string
}>()("app/accounts/PlatformMail") {
  static readonly layer = Layer.effect(
    PlatformMail,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const transport = yield* MailTransport
      const domain = config.platformFrom.match(/@([^>\s]+)>?$/)?.[1] ?? "localhost"
      return PlatformMail.of({
        link: (path, token) => `${config.publicUrl}${path}?token=${encodeURIComponent(token)}`,
        send: (message) =>
          Effect.tryPromise(() =>
            transport.send({
              from: config.platformFrom,
              to: message.to,
              subject: message.subject,
              text: message.text,
              html: `<p>${escapeHtml(message.text).replace(/\n/g, "<br>")}</p>`,
              messageId: `<${uuidv7()}@${domain}>`
            })
          ).pipe(
            Effect.asVoid,
            // The request that triggered it still succeeds (a reset request must not reveal anything); operators see the log.
            Effect.catchCause((cause) => Effect.logError("platform mail failed", { to: message.to, subject: message.subject }, cause))
          )
      })
    })
  )
}
