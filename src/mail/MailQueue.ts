/**
 * The one way mail is queued, for every producer (/v1/send, campaign fan-out and test mails, workflow
 * SEND_EMAIL steps): render each recipient's mail with the project's settings (prepareEmail: links,
 * tracking, unsubscribe headers, size caps; typed failures), insert the rows (PENDING, on the owner
 * lane's partition where the project's sender and throttle run) and append one `email` message to the
 * Outbox, all in the caller's transaction: the mail is queued exactly when what caused it commits.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { AppConfig } from "../config.ts"
import { insertQueuedEmails, type NewEmail } from "../store/Emails.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import { Projects } from "../store/Projects.ts"
import { OWNER_LANE } from "../stream/lanes.ts"
import { Outbox } from "../stream/Outbox.ts"
import type { MailTooLarge, RenderError } from "./errors.ts"
import { type PreparedContent, prepareEmail, type Recipient } from "./prepare.ts"

/** A project's mail, its settings read once: render recipients one by one, queue them together. */
export interface ProjectMail {
  readonly render: (
    content: PreparedContent,
    recipient: Recipient,
    sendData?: Readonly<Record<string, unknown>> | undefined
  ) => Effect.Effect<NewEmail, RenderError | MailTooLarge>
}

export class MailQueue extends Context.Service<MailQueue, {
  /** The project's renderer; `trackingEnabled: false` for mail that must not be tracked (campaign tests). */
  readonly forProject: (projectId: string, options?: { readonly trackingEnabled?: boolean }) => Effect.Effect<ProjectMail, PersistenceError>
  /** Queues rendered mail: rows and the sender's wake-up message, inside the caller's transaction. */
  readonly queue: (projectId: string, emails: ReadonlyArray<NewEmail>) => Effect.Effect<void, SqlError.SqlError>
}>()("app/mail/MailQueue") {
  static readonly layer = Layer.effect(
    MailQueue,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const projects = yield* Projects
      const { publicUrl } = yield* AppConfig

      const forProject = Effect.fn("MailQueue.forProject")(
        function*(projectId: string, options: { readonly trackingEnabled?: boolean } = {}) {
          const settings = yield* projects.mailSettings(projectId)
          const project = {
            projectId,
            linkSecret: settings.linkSecret,
            trackingEnabled: options.trackingEnabled ?? settings.trackingEnabled,
            publicUrl
          }
          return {
            render: (content, recipient, sendData) => prepareEmail(project, content, recipient, sendData)
          } satisfies ProjectMail
        }
      )

      const queue = Effect.fn("MailQueue.queue")(function*(projectId: string, emails: ReadonlyArray<NewEmail>) {
        if (emails.length === 0) return
        // The project's sender runs where its owner lane is (one throttle per project).
        yield* insertQueuedEmails(sql, projectId, outbox.lanes.partitionOf(projectId, OWNER_LANE), emails)
        yield* outbox.append([{ kind: "email", projectId, emailIds: emails.map((email) => email.id) }])
      })

      return MailQueue.of({ forProject, queue })
    })
  )
}
