/**
 * The /v1/send use case, in one transaction: the recipients' contacts upserted (one statement), then each
 * recipient in order gets its mail rendered (through the MailQueue); a MARKETING template is refused for the whole request when a
 * recipient's contact is unsubscribed; the month's transactional cap is reserved for all of them,
 * the mail is queued (rows and the sender's wake-up message), and the caller's `commit` runs last in
 * the same transaction (the idempotency key's completion: the mail and the key commit together, so a
 * retry after a crash can never send twice). The handler checks the request and maps the typed failures.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { DataPatch } from "../domain/customData.ts"
import { normalizeEmail } from "../domain/email.ts"
import { Billing, type BillingLimitExceeded } from "../store/Billing.ts"
import { type ContactDataTooLarge, Contacts } from "../store/Contacts.ts"
import type { NewEmail } from "../store/Emails.ts"
import { mapSqlError, type PersistenceError } from "../store/PersistenceError.ts"
import { MarketingToUnsubscribed, type MailTooLarge, type RenderError, RequestTooLarge } from "./errors.ts"
import { MailQueue } from "./MailQueue.ts"
import { messageBytes, type PreparedContent } from "./prepare.ts"

/**
 * What one request may store: every recipient's rendered message (body, headers, its own copy of the
 * attachments), added up. Attachments times recipients are checked against it before rendering.
 */
export const MAX_BYTES_PER_REQUEST = 50 * 1024 * 1024

export interface SendInput {
  readonly projectId: string
  readonly recipients: ReadonlyArray<{ readonly email: string; readonly name: string | null }>
  readonly content: PreparedContent
  /** The request's data: stored on each contact (the patch) and seen by the templates (set and transient keys). */
  readonly patch: DataPatch
  readonly subscribed: boolean | undefined
}

export interface Queued {
  readonly contact: { readonly id: string; readonly email: string }
  readonly emailId: string
}

export type SendFailure =
  | RenderError
  | MailTooLarge
  | RequestTooLarge
  | MarketingToUnsubscribed
  | BillingLimitExceeded
  | ContactDataTooLarge

export class SendMail extends Context.Service<SendMail, {
  readonly send: <A, E>(
    input: SendInput,
    commit: (queued: ReadonlyArray<Queued>) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | SendFailure | PersistenceError>
}>()("app/mail/SendMail") {
  static readonly layer = Layer.effect(
    SendMail,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const contacts = yield* Contacts
      const billing = yield* Billing
      const mail = yield* MailQueue

      const send = <A, E>(input: SendInput, commit: (queued: ReadonlyArray<Queued>) => Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const projectMail = yield* mail.forProject(input.projectId)
          const sendData = { ...input.patch.set, ...input.patch.transient }
          return yield* sql.withTransaction(Effect.gen(function*() {
            const prepared: Array<{ readonly contact: { id: string; email: string }; readonly email: NewEmail }> = []
            const unsubscribed: Array<{ readonly index: number; readonly email: string }> = []
            let storedBytes = 0
            // Every recipient's contact in one statement (an address given twice is upserted once: the
            // second write of the same patch changed nothing); then, recipient by recipient in order, the checks
            // and the rendering, as if each had been upserted just before.
            const addresses = input.recipients.map((recipient) => normalizeEmail(recipient.email))
            const upserted = new Map(
              (yield* contacts.upsertMany({
                projectId: input.projectId,
                emails: [...new Set(addresses)],
                subscribed: input.subscribed,
                subscribedByDefault: false,
                newContactBaseline: false,
                patch: input.patch,
                source: "api.send"
              })).map((result) => [result.email, result])
            )
            for (const [index, recipient] of input.recipients.entries()) {
              const result = upserted.get(addresses[index]!)!
              if (result.tooLarge) return yield* result.tooLarge
              const { contact } = result.upserted
              // Marketing content never goes to a contact who opted out, whatever the endpoint (the reference refuses it too).
              if (input.content.marketingTemplate === true && !contact.subscribed) {
                unsubscribed.push({ index, email: contact.email })
                continue
              }
              const email = yield* projectMail.render(input.content, {
                contactId: contact.id,
                email: contact.email,
                name: recipient.name,
                data: contact.data
              }, sendData)
              // Checked as each recipient is rendered, so a request never holds more than the cap.
              storedBytes += messageBytes(email)
              if (storedBytes > MAX_BYTES_PER_REQUEST) {
                return yield* new RequestTooLarge({
                  limit: MAX_BYTES_PER_REQUEST,
                  message: `The emails of this request (rendered bodies, headers and each recipient's copy of the attachments) pass ` +
                    `${MAX_BYTES_PER_REQUEST} bytes (50 MB) at recipient ${
                      prepared.length + 1
                    } of ${input.recipients.length}: send fewer recipients per request`
                })
              }
              prepared.push({ contact: { id: contact.id, email: contact.email }, email })
            }
            if (unsubscribed.length > 0) return yield* new MarketingToUnsubscribed({ recipients: unsubscribed })
            // The month's transactional cap, checked and claimed under a lock until this transaction commits.
            yield* billing.reserve(input.projectId, "transactional", prepared.length)
            yield* mail.queue(input.projectId, prepared.map((item) => item.email))
            return yield* commit(prepared.map((item) => ({ contact: item.contact, emailId: item.email.id })))
          }))
        }).pipe(mapSqlError, Effect.withSpan("SendMail.send"))

      return SendMail.of({ send })
    })
  )
}
