/**
 * The platform's own mail to people (email verification, password reset, invitations), sent from
 * PLATFORM_FROM through the same transport as every other message: SMTP_URL, or the file outbox.
 *
 * Requests only queue it (a row in `platform_mail`, src/store/PlatformMailQueue.ts) and answer; a loop
 * in each api process sends what is due, woken by its own requests, and retries what the relay
 * refused for a while (backing off), so a request never waits on the relay, a relay outage delays
 * mail instead of losing it, and a reset request does the same work whether or not the email has an
 * account (the loop finds out, see passwordResetMail.ts).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { makeWakeup, runWhenDue } from "../lib/dueLoop.ts"
import { MailTransport, SendFailure } from "../mail/Transport.ts"
import { AccountTokens } from "../store/AccountTokens.ts"
import { Members } from "../store/Members.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import { type PlatformMessage, PlatformMailQueue, type QueuedMail } from "../store/PlatformMailQueue.ts"
import { Users } from "../store/Users.ts"
import { passwordResetMessage } from "./passwordResetMail.ts"

export type { PlatformMessage }

/** Rows claimed a round, and how long a claim holds before another process may take the row. */
const BATCH = 20
const LEASE_SECONDS = 120
/** Retries 2 s, 4 s, 8 s … apart, at most 30 minutes, 16 attempts in all (about 3.5 hours). */
const MAX_ATTEMPTS = 16
const retryDelaySeconds = (attempts: number) => Math.min(1800, 2 ** attempts)

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!)

export class PlatformMail extends Context.Service<PlatformMail, {
  /** Queues a message; it goes out in the moments after (the caller must not hold a transaction open). */
  readonly queue: (message: PlatformMessage) => Effect.Effect<void, PersistenceError>
  /** Queues a password reset request for an email, known or not. */
  readonly queuePasswordReset: (email: string) => Effect.Effect<void, PersistenceError>
  /** A link into the dashboard under PUBLIC_URL. */
  readonly link: (path: string, token: string) => string
}>()("app/accounts/PlatformMail") {
  static readonly layer = Layer.effect(
    PlatformMail,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const transport = yield* MailTransport
      const queue = yield* PlatformMailQueue
      const stores = { users: yield* Users, tokens: yield* AccountTokens, members: yield* Members }
      const domain = config.platformFrom.match(/@([^>\s]+)>?$/)?.[1] ?? "localhost"
      const link = (path: string, token: string) => `${config.publicUrl}${path}?token=${encodeURIComponent(token)}`
      const wakeup = yield* makeWakeup

      const send = (message: PlatformMessage) =>
        Effect.tryPromise({
          try: () =>
            transport.send({
              from: config.platformFrom,
              to: message.to,
              subject: message.subject,
              text: message.text,
              html: `<p>${escapeHtml(message.text).replace(/\n/g, "<br>")}</p>`,
              messageId: `<${uuidv7()}@${domain}>`
            }),
          catch: (error) => error instanceof SendFailure ? error : new SendFailure(String(error), false)
        })

      const deliver = Effect.fnUntraced(function*(row: QueuedMail) {
        const message = row.kind === "message" ? row.message : yield* passwordResetMessage(stores, link, row.email)
        if (!message) return yield* queue.remove(row.id) // no account, or one mailed a minute ago: nothing to send
        const failure = yield* send(message).pipe(Effect.flip, Effect.option)
        if (failure._tag === "None") return yield* queue.remove(row.id)
        const error = failure.value
        if (error.permanent || row.attempts >= MAX_ATTEMPTS) {
          yield* Effect.logError("platform mail given up", {
            to: message.to,
            subject: message.subject,
            attempts: row.attempts,
            error: error.message
          })
          return yield* queue.remove(row.id)
        }
        yield* Effect.logWarning("platform mail failed; retrying", {
          to: message.to,
          subject: message.subject,
          attempts: row.attempts,
          error: error.message
        })
        yield* queue.retryLater(row.id, retryDelaySeconds(row.attempts), error.message, row.kind === "message" ? undefined : message)
      })

      /** One row's failure (its database work) leaves it leased: a round takes it again once the lease ends. */
      const deliverOrLeave = (row: QueuedMail) =>
        deliver(row).pipe(Effect.catchCause((cause) => Effect.logWarning("platform mail: a queued row failed", { id: row.id }, cause)))

      yield* Effect.forkScoped(runWhenDue({
        name: "platform mail",
        round: Effect.flatMap(
          queue.claimDue(BATCH, LEASE_SECONDS),
          (rows) => Effect.as(Effect.forEach(rows, deliverOrLeave, { discard: true }), rows.length === BATCH)
        ),
        nextDueIn: queue.nextDueIn,
        wakeup,
        gap: "20 millis",
        atMost: "10 seconds"
      }))

      return PlatformMail.of({
        link,
        queue: (message) => Effect.andThen(queue.enqueueMessage(message), wakeup.signal),
        queuePasswordReset: (email) => Effect.andThen(queue.enqueuePasswordReset(email), wakeup.signal)
      })
    })
  )
}
