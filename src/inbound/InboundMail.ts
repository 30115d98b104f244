/**
 * Received mail, whichever way it came (our SMTP receiver, SES through SNS): one message for one project
 * becomes, in one transaction, an `emails` row of direction `inbound` (status RECEIVED, counted in the
 * `inbound` billing category, linked to the email of ours it answers) and an `email.received` event on the
 * sender's contact (created unsubscribed when new), appended to the outbox, which the relay publishes to
 * the contact's lane: it is stored there once, shown in activity, and triggers workflows like any event.
 * The caller answers the sender (SMTP 250) only after the commit, so an accepted message is never lost;
 * a retried delivery of the same message (same Message-ID) to the same project is recorded once.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { emptyPatch } from "../domain/customData.ts"
import { uuidv7 } from "../domain/ids.ts"
import { Billing, BillingLimitExceeded } from "../store/Billing.ts"
import { Contacts } from "../store/Contacts.ts"
import { mapSqlError, type PersistenceError } from "../store/PersistenceError.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import { OWNER_LANE } from "../stream/lanes.ts"
import type { AuthenticationResults } from "./authentication.ts"
import type { InboundMessage } from "./message.ts"

export interface InboundDelivery {
  readonly projectId: string
  /** The project's recipients of the message (envelope RCPT TO at its verified domains). */
  readonly recipients: ReadonlyArray<string>
  /** The contact's address: the From header's, else the envelope sender's. */
  readonly sender: string
  readonly message: InboundMessage
  readonly authentication: AuthenticationResults
  /** The message as received, when we have it (SES with an S3 action sends only headers). */
  readonly raw: Buffer | undefined
  /** How it came: smtp or ses. */
  readonly via: "smtp" | "ses"
}

export type InboundOutcome =
  | { readonly _tag: "Recorded"; readonly emailId: string; readonly contactId: string; readonly inReplyTo: string | null }
  | { readonly _tag: "Duplicate" }

export { BillingLimitExceeded }

export class InboundMail extends Context.Service<InboundMail, {
  /** The projects that verified this domain (lower-case), cached briefly. */
  readonly projectsOf: (domain: string) => Effect.Effect<ReadonlyArray<string>, PersistenceError>
  readonly record: (delivery: InboundDelivery) => Effect.Effect<InboundOutcome, PersistenceError | BillingLimitExceeded>
}>()("app/inbound/InboundMail") {
  static readonly layer = Layer.effect(
    InboundMail,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const contacts = yield* Contacts
      const outbox = yield* Outbox
      const relay = yield* OutboxRelay
      const billing = yield* Billing
      const clock = yield* Clock.Clock

      // A domain's projects for 10 s: an SMTP session asks once per recipient.
      const cache = new Map<string, { readonly projects: ReadonlyArray<string>; readonly until: number }>()
      const projectsOf = Effect.fn("InboundMail.projectsOf")(function*(domain: string) {
        const now = clock.currentTimeMillisUnsafe()
        const hit = cache.get(domain)
        if (hit && hit.until > now) return hit.projects
        const rows = yield* sql<{ project_id: string }>`
          SELECT d.project_id FROM domains d JOIN projects p ON p.id = d.project_id
          WHERE d.domain = ${domain} AND d.status = 'VERIFIED' ORDER BY d.project_id`
        const projects = rows.map((row) => row.project_id)
        if (cache.size > 10_000) cache.clear()
        cache.set(domain, { projects, until: now + 10_000 })
        return projects
      }, mapSqlError)

      const contactOf = (projectId: string, email: string) =>
        Effect.gen(function*() {
          const [known] = yield* sql<{ id: string }>`SELECT id FROM contacts WHERE project_id = ${projectId} AND email = ${email}`
          if (known) return known.id
          // A new contact who wrote to us has not subscribed to anything.
          const created = yield* contacts.upsert({
            projectId,
            email,
            subscribed: undefined,
            subscribedByDefault: false,
            patch: emptyPatch,
            source: "inbound"
          }).pipe(Effect.catchTag("ContactDataTooLarge", Effect.die))
          return created.contact.id
        })

      /** The newest email of ours (outbound, this project) among the Message-IDs the message answers. */
      const answered = (projectId: string, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed(null)
          : sql<{ id: string; message_id: string }>`
              SELECT id, message_id FROM emails
              WHERE project_id = ${projectId} AND direction = 'outbound' AND message_id IN ${sql.in(ids.slice(0, 50))}`.pipe(
            Effect.map((rows) => {
              for (const id of ids) {
                const row = rows.find((candidate) => candidate.message_id === id)
                if (row) return row.id
              }
              return null
            })
          )

      const record = Effect.fn("InboundMail.record")(function*(delivery: InboundDelivery) {
        const { message, projectId } = delivery
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          if (message.messageId !== undefined) {
            const [seen] = yield* sql`
              SELECT 1 FROM emails WHERE project_id = ${projectId} AND direction = 'inbound' AND external_message_id = ${message.messageId}`
            if (seen) return { _tag: "Duplicate" } as const
          }
          yield* billing.reserve(projectId, "inbound", 1)
          const contactId = yield* contactOf(projectId, delivery.sender)
          const inReplyTo = yield* answered(projectId, message.answers)
          const emailId = uuidv7()
          const at = new Date(clock.currentTimeMillisUnsafe()).toISOString()
          const inserted = yield* sql<{ id: string }>`
            INSERT INTO emails (id, project_id, partition, contact_id, to_email, from_email, from_name, reply_to, subject, html,
                                attachments, type, priority, message_id, status, billing_category, direction, external_message_id,
                                in_reply_to_email_id, auth_results, raw_message, created_at)
            VALUES (${emailId}, ${projectId}, ${outbox.lanes.partitionOf(projectId, OWNER_LANE)}, ${contactId},
                    ${delivery.recipients.join(", ")}, ${delivery.sender}, ${message.fromName ?? null}, ${message.replyTo ?? null},
                    ${message.subject}, ${message.html}, ${JSON.stringify(message.attachments)}::jsonb, 'TRANSACTIONAL', 1,
                    ${`inbound.${emailId}@mailstream`}, 'RECEIVED', 'inbound', 'inbound', ${message.messageId ?? null},
                    ${inReplyTo}, ${JSON.stringify(delivery.authentication)}::jsonb, ${delivery.raw ?? null}, ${at}::timestamptz)
            ON CONFLICT (project_id, external_message_id) WHERE direction = 'inbound' AND external_message_id IS NOT NULL DO NOTHING
            RETURNING id`
          // A concurrent delivery of the same message won the insert: this one is its duplicate.
          if (inserted.length === 0) return yield* Effect.die(new DuplicateRace())
          yield* outbox.emit(projectId, [{
            name: "email.received",
            contactId,
            email: delivery.sender,
            data: {
              emailId,
              subject: message.subject,
              from: delivery.sender,
              to: delivery.recipients,
              ...(message.messageId !== undefined ? { messageId: message.messageId } : {}),
              ...(inReplyTo !== null ? { inReplyTo } : {}),
              authentication: delivery.authentication,
              via: delivery.via
            },
            at
          }])
          return { _tag: "Recorded", emailId, contactId, inReplyTo } as const
        })).pipe(
          Effect.catchDefect((defect) =>
            defect instanceof DuplicateRace ? Effect.succeed({ _tag: "Duplicate" } as const) : Effect.die(defect)
          ),
          mapSqlError
        )
        if (outcome._tag === "Recorded") yield* relay.wake
        return outcome satisfies InboundOutcome
      })

      return InboundMail.of({ projectsOf, record })
    })
  )
}

/** Rolls the transaction back when a concurrent delivery of the same message was recorded first. */
class DuplicateRace extends Error {}
