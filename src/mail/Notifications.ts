/**
 * Inbound delivery notifications (delivered, bounced, complained), whatever provider reported them.
 * Each is applied once: its receipt, the email's engagement (status forward, email.* event) and, for
 * hard bounces and complaints, the suppression and unsubscription of the address commit together.
 * A transient (soft) bounce only emits its email.bounce event: the email is not bounced.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { emptyPatch } from "../domain/customData.ts"
import { Contacts } from "../store/Contacts.ts"
import { Emails } from "../store/Emails.ts"
import { mapSqlError, type PersistenceError } from "../store/PersistenceError.ts"

export type BounceType = "Permanent" | "Transient" | "Undetermined"

export interface Notification {
  /** The provider's id of this notification: repeats of it are ignored. */
  readonly id: string
  readonly kind: "delivery" | "bounce" | "complaint"
  /** The Message-ID we gave the email (with or without angle brackets). */
  readonly messageId: string
  readonly bounceType?: BounceType | undefined
}

export type NotificationOutcome = "applied" | "duplicate" | "unknown-email"

export class Notifications extends Context.Service<Notifications, {
  /** `projectId` limits the email lookup to one project (authenticated providers); omitted, any project. */
  readonly apply: (provider: string, notification: Notification, projectId?: string) => Effect.Effect<NotificationOutcome, PersistenceError>
}>()("app/mail/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const emails = yield* Emails
      const contacts = yield* Contacts

      const apply = (provider: string, notification: Notification, projectId?: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const email = yield* emails.byMessageId(notification.messageId, projectId)
          if (!email) return "unknown-email" as const
          // Receipts are per project, so one project cannot mark another's notification ids as seen.
          const fresh = yield* sql`
            INSERT INTO webhook_receipts (provider, id) VALUES (${`${provider}:${email.projectId}`}, ${notification.id})
            ON CONFLICT DO NOTHING RETURNING id`
          if (fresh.length === 0) return "duplicate" as const
          const data = notification.kind === "bounce" ? { bounceType: notification.bounceType ?? "Undetermined" } : {}
          if (notification.kind === "bounce" && notification.bounceType === "Transient") {
            // A full mailbox, an out-of-office, greylisting: not a dead address. The email keeps its status, the
            // campaign's bounce count and the bounce rate ignore it; workflows still see the event (its bounceType says which).
            yield* emails.notify(email, "bounce", data)
            return "applied" as const
          }
          yield* emails.engage(email, notification.kind, data)
          const suppress = notification.kind === "complaint" || (notification.kind === "bounce" && notification.bounceType === "Permanent")
          if (suppress) {
            yield* sql`
              INSERT INTO suppressions (project_id, email, reason)
              VALUES (${email.projectId}, ${email.to}, ${notification.kind === "complaint" ? "complaint" : "hard_bounce"})
              ON CONFLICT DO NOTHING`
            if (email.contactId) {
              yield* contacts.update(email.projectId, email.contactId, { subscribed: false, patch: emptyPatch }).pipe(
                // Only the subscription changes: no email to collide, no data to grow; either would be a defect.
                Effect.catchTags({ DuplicateEmail: Effect.die, ContactDataTooLarge: Effect.die })
              )
            }
          }
          return "applied" as const
        })).pipe(mapSqlError)

      return Notifications.of({ apply })
    })
  )
}
