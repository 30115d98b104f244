/**
 * Where mail goes: the SMTP relay named by SMTP_URL (pooled connections), or, when no relay is
 * configured (development), a local file outbox: one `.eml` per message in OUTBOX_DIR.
 * Messages are composed and DKIM-signed by nodemailer with the sending domain's key either way, in the
 * compose pool's threads (src/mail/composePool.ts: MAIL_THREADS), and handed to the relay as bytes.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import nodemailer from "nodemailer"
import type Mail from "nodemailer/lib/mailer"
import { AppConfig } from "../config.ts"
import { makeComposePool } from "./composePool.ts"
import type { ComposeOptions } from "./composeRaw.ts"
import { sendRaw } from "./sendRaw.ts"

/** Headers the DKIM signature covers: nodemailer's defaults plus RFC 8058's List-Unsubscribe-Post. */
export const DKIM_SIGNED_HEADERS = [
  "From",
  "Sender",
  "Reply-To",
  "Subject",
  "Date",
  "Message-ID",
  "To",
  "Cc",
  "MIME-Version",
  "Content-Type",
  "Content-Transfer-Encoding",
  "List-Unsubscribe",
  "List-Unsubscribe-Post",
  "List-Id"
].join(":")

export class SendFailure extends Error {
  override readonly name = "SendFailure"
  readonly permanent: boolean
  constructor(message: string, permanent: boolean) {
    super(message)
    this.permanent = permanent
  }
}

/** 5xx replies are permanent (the relay refused the message); everything else may pass on a retry. */
const classify = (error: unknown): SendFailure => {
  const e = error as { responseCode?: number; response?: string; message?: string; code?: string }
  const permanent = typeof e.responseCode === "number" && e.responseCode >= 500 && e.responseCode < 600
  return new SendFailure(e.response ?? e.message ?? String(error), permanent)
}

export class MailTransport extends Context.Service<MailTransport, {
  readonly kind: "smtp" | "file"
  /** Resolves with the relay's reply; fails with a SendFailure saying whether to retry. */
  readonly send: (message: Mail.Options, options?: ComposeOptions) => Promise<string>
}>()("app/mail/MailTransport") {
  static readonly layer = Layer.effect(
    MailTransport,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const smtpUrl = config.smtpUrl
      const pool = yield* makeComposePool(config.mailThreads)
      if (smtpUrl) {
        const transport = yield* Effect.acquireRelease(
          Effect.sync(() =>
            nodemailer.createTransport({
              url: Redacted.value(smtpUrl),
              pool: true,
              maxConnections: config.smtpPoolSize,
              maxMessages: Infinity,
              connectionTimeout: 10_000,
              greetingTimeout: 10_000,
              socketTimeout: 60_000
            } as unknown as string)
          ),
          (transport) => Effect.sync(() => transport.close())
        )
        return MailTransport.of({
          kind: "smtp",
          send: (message, options) =>
            pool.compose(message, options).then((composed) => sendRaw(transport, composed, message.messageId))
              .then(
                (info) => String(info.response ?? "accepted"),
                (error) => Promise.reject(classify(error))
              )
        })
      }
      const directory = config.outboxDir
      yield* Effect.promise(() => mkdir(directory, { recursive: true }))
      const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" })
      yield* Effect.logInfo("no SMTP_URL: mail is written to the file outbox", { directory })
      return MailTransport.of({
        kind: "file",
        send: async (message, options) => {
          try {
            const { raw, envelope } = await pool.compose(message, options)
            const info = await transport.sendMail({ envelope: envelope as Mail.Envelope, raw })
            const name = String(message.messageId ?? Date.now()).replace(/^<|>$/g, "").replace(/[^A-Za-z0-9@._-]/g, "_")
            await writeFile(join(directory, `${name}.eml`), info.message as Buffer)
            return `written to ${directory}`
          } catch (error) {
            throw classify(error)
          }
        }
      })
    })
  )
}
