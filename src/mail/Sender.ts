/**
 * The worker's sender. Queued mail (PENDING rows) of the partitions this worker leases is sent by one
 * loop per project, woken by the project's actor when an `email` message arrives and by a sweep that
 * finds mail due for a retry. Each loop claims rows (PENDING → SENDING), transactional mail first,
 * as fast as the project's token bucket allows, and hands them to the transport.
 *
 * Crash safety: a row is SENDING from its claim until its round's outcome is recorded (one statement
 * for the round's accepted mail). A worker that takes over a partition puts the partition's SENDING
 * rows back to PENDING, so a crash between the relay's acceptance and our recording resends only the
 * round that was in flight (at most CLAIM_BATCH messages, and under a throttle a tenth of a second's
 * worth), each once, with the same Message-ID.
 *
 * One bad row never stalls the queue: the claim reads no content (html, headers, attachments); the
 * content is read after it, for the round at once when small, one email (and one attachment) at a
 * time when large. An email whose content cannot be read, breaks a size cap (rows queued before the
 * caps) or cannot be composed is FAILED with the reason, and the project's queue moves on.
 */
import { Cause, Duration, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import type { EmailContent, EmailRow } from "../store/Emails.ts"
import { completeCampaigns } from "../store/campaignSending.ts"
import { Domains } from "../store/Domains.ts"
import { Projects } from "../store/Projects.ts"
import { OWNER_LANE } from "../stream/lanes.ts"
import type { Outbox } from "../stream/Outbox.ts"
import { isolateRow, reasonOf, storableReason } from "../lib/isolation.ts"
import { pgArray } from "../lib/pgArray.ts"
import { MailMetrics } from "./metrics.ts"
import { requiresVerifiedDomain } from "../domain/delivery.ts"
import { capExceeded, htmlTooLarge } from "./prepare.ts"
import { TokenBucket } from "./throttle.ts"
import { composeMessage } from "./composeMessage.ts"
import { type ClaimedRow, makeSendQueue } from "./sendQueue.ts"
import { makeSigningKeys } from "./signingKeys.ts"
import { MailTransport, SendFailure } from "./Transport.ts"

/** Rows claimed per round (and sent concurrently). */
const CLAIM_BATCH = 64
/** Rounds in flight per project. */
const LANES = 2
export const MAX_ATTEMPTS = 8
/** Backoff after the n-th failed attempt: 2 s, 4 s, 8 s … capped at 10 minutes. */
export const retryDelaySeconds = (attempt: number) => Math.min(600, 2 ** attempt)
/** Content up to this size (as stored) is read for the whole round in one query; larger content one email at a time. */
const BULK_CONTENT_BYTES = 1024 * 1024
/** Emails with large content in flight at once per lane (each holds its content in memory until sent). */
const LARGE_CONCURRENCY = 2
/** How long a SENDING row no round of this process holds waits before the sweep re-queues it. */
const ORPHAN_AFTER_MS = 3_000

interface ProjectLoop {
  dirty: boolean
  bucket: TokenBucket | undefined
}

export const makeSender = (options: {
  readonly outbox: Outbox["Service"]
  readonly isOwned: (partition: number) => boolean
  readonly wakeRelay: Effect.Effect<void>
  /** Tells the dashboard's live pages the project's mail moved (sent, failed, a campaign finished). */
  readonly changed: (projectId: string) => Effect.Effect<void>
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const transport = yield* MailTransport
    const domains = yield* Domains
    const projects = yield* Projects
    const domainRequired = requiresVerifiedDomain(config)
    const loops = new Map<string, ProjectLoop>()
    /**
     * Emails this process claimed (SENDING) and has not recorded an outcome for yet: a partition taken
     * over again (its lease lost while Postgres or NATS was away, and won back) must not re-queue mail
     * this process is still sending, or has sent and is still recording, or it goes out twice.
     */
    const held = new Set<string>()
    const { claim, loadSmallContents, loadContent, finish, markSent } = makeSendQueue(sql, options.outbox)
    const signingKeyOf = makeSigningKeys(domains)

    /** The project's rate (cached a few seconds by Projects), or the deployment's default. */
    const rateOf = (projectId: string) =>
      Effect.map(projects.mailSettings(projectId), (settings) => settings.sendRatePerSecond ?? config.sendRatePerSecond)

    /** `record` until it commits (a failure or a defect: Postgres away), unless interrupted. */
    const untilRecorded = <A, E>(what: string, details: object, record: Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        for (let attempt = 0;; attempt++) {
          const exit = yield* Effect.exit(record)
          if (Exit.isSuccess(exit) || Cause.hasInterrupts(exit.cause)) return yield* exit
          yield* Effect.logWarning(`${what} failed; retrying`, details, exit.cause)
          yield* Effect.sleep(Duration.millis(Math.min(2_000, 100 * 2 ** attempt)))
        }
      })

    const recordSent = (projectId: string, rows: ReadonlyArray<EmailRow>) =>
      untilRecorded("recording sent mail", { projectId, emails: rows.length }, markSent(rows))

    const countFailure = (outcome: "retry" | "failed") => Effect.sync(() => MailMetrics.sendFailures.inc(1, { outcome }))

    /** FAILED, counted as a send failure. */
    const failed = (row: EmailRow, error: string) => countFailure("failed").pipe(Effect.andThen(finish(row, "FAILED", error)))

    const retryLater = (row: EmailRow, error: string) =>
      row.attempts >= MAX_ATTEMPTS
        ? failed(row, `gave up after ${row.attempts} attempts: ${error}`)
        : countFailure("retry").pipe(Effect.andThen(sql`UPDATE emails SET status = 'PENDING', error = ${storableReason(error)},
                 next_attempt_at = now() + make_interval(secs => ${retryDelaySeconds(row.attempts)})
              WHERE id = ${row.id} AND status = 'SENDING'`))

    const sendOne = (row: ClaimedRow, loaded: EmailContent | undefined, accepted: Array<EmailRow>) =>
      Effect.gen(function*() {
        if (row.suppressed) return yield* finish(row, "SUPPRESSED", "the address is suppressed (hard bounce or complaint)", "suppressed")
        // Marketing content (campaigns, workflows, a MARKETING template through /v1/send) waits in the queue:
        // a contact who unsubscribed meanwhile does not get it.
        if ((row.type === "MARKETING" || row.marketing_template) && row.contact_id && row.contact_subscribed !== true) {
          return yield* finish(row, "SUPPRESSED", "the contact is unsubscribed", "unsubscribed")
        }
        // Mail queued before the caps (or written around them) is not sent either, nor read when its size says so.
        const bodyTooLarge = htmlTooLarge(row.to_email, row.html_bytes)
        if (bodyTooLarge) return yield* failed(row, bodyTooLarge.message)
        const content = loaded ?? (yield* loadContent(row.id))
        const tooLarge = capExceeded({ to: row.to_email, ...content })
        if (tooLarge) return yield* failed(row, tooLarge.message)
        const key = yield* signingKeyOf(row.project_id, row.from_email)
        // Local delivery (the file outbox) writes what an unverified domain sends, unsigned; a relay gets signed mail only.
        if (!key && domainRequired) return yield* failed(row, `the sender domain of ${row.from_email} is not verified`)
        const message = composeMessage(row, content, key, "by the composer")
        const outcome = yield* Effect.promise(() =>
          transport.send(message, { textFromHtml: true }).then(
            () => undefined,
            (error: unknown) => error instanceof SendFailure ? error : new SendFailure(String(error), false)
          )
        )
        if (outcome === undefined) {
          accepted.push(row)
        } else if (outcome.permanent) {
          yield* failed(row, outcome.message)
        } else {
          yield* retryLater(row, outcome.message)
        }
      }).pipe(
        // A row that cannot be read, checked or composed fails alone, with the reason.
        (work) =>
          isolateRow(
            "sender",
            { emailId: row.id, projectId: row.project_id },
            work,
            (reason) => finish(row, "FAILED", `cannot be sent: ${reason}`)
          ),
        // A database hiccup: the row goes back to the queue (counted as an attempt) once Postgres answers
        // again. Left SENDING, nothing would send it while this worker keeps the partition's lease.
        Effect.catchCause((cause) =>
          Cause.hasInterrupts(cause)
            ? Effect.failCause(cause)
            : Effect.logWarning("sending an email failed; retrying later", { emailId: row.id }, cause).pipe(
              Effect.andThen(untilRecorded("re-queueing an email", { emailId: row.id }, retryLater(row, reasonOf(cause))))
            )
        )
      )

    /**
     * One lane: claim a round, send it, record it, repeat. Tokens are reserved before the claim (and
     * what the claim did not use is given back), so concurrent lanes never exceed the rate together.
     */
    const lane = (projectId: string, loop: ProjectLoop) =>
      Effect.gen(function*() {
        // The project's sender runs where its owner lane is leased: one throttle per project.
        const partition = options.outbox.lanes.partitionOf(projectId, OWNER_LANE)
        while (options.isOwned(partition)) {
          loop.dirty = false
          const rate = yield* rateOf(projectId)
          let limit = CLAIM_BATCH
          let bucket: TokenBucket | undefined
          if (rate > 0) {
            bucket = loop.bucket ??= new TokenBucket(rate, Date.now())
            bucket.setRate(rate, Date.now())
            const wait = bucket.waitMs(Date.now())
            if (wait > 0) {
              yield* Effect.sleep(wait)
              continue
            }
            limit = bucket.available(Date.now(), CLAIM_BATCH)
            bucket.take(limit, Date.now())
          }
          const claimed = yield* claim(projectId, limit)
          bucket?.take(claimed.length - limit, Date.now())
          if (claimed.length === 0) {
            if (loop.dirty) continue
            break
          }
          for (const row of claimed) held.add(row.id)
          const accepted: Array<EmailRow> = []
          yield* Effect.gen(function*() {
            const small = claimed.filter((row) => row.content_bytes <= BULK_CONTENT_BYTES)
            const large = claimed.filter((row) => row.content_bytes > BULK_CONTENT_BYTES)
            const contents = yield* loadSmallContents(small)
            yield* Effect.all([
              Effect.forEach(small, (row) => sendOne(row, contents.get(row.id), accepted), { concurrency: "unbounded", discard: true }),
              Effect.forEach(large, (row) => sendOne(row, undefined, accepted), { concurrency: LARGE_CONCURRENCY, discard: true })
            ], { concurrency: 2, discard: true })
            // Until this commits, accepted mail is SENDING: a crash here resends this round only. Postgres
            // away is no crash: the relay took this mail, so it is recorded SENT once Postgres is back (its
            // rows held meanwhile), never sent again.
            MailMetrics.sent.inc(accepted.length)
            yield* recordSent(projectId, accepted)
          }).pipe(Effect.ensuring(Effect.sync(() => {
            for (const row of claimed) held.delete(row.id)
          })))
          // Retried like the outcomes: after a campaign's last round nothing else would mark it SENT.
          const campaignIds = [...new Set(claimed.flatMap((row) => (row.campaign_id ? [row.campaign_id] : [])))]
          yield* untilRecorded("completing campaigns", { projectId, campaignIds }, completeCampaigns(sql, campaignIds))
          if (accepted.length > 0) yield* options.wakeRelay
          yield* options.changed(projectId)
        }
      })

    /** The project's lanes: while one records its round, the other is already sending. */
    const runLoop = (projectId: string, loop: ProjectLoop): Effect.Effect<void> =>
      // A lane that fails stops alone: the other may be recording mail the relay already took, which an
      // interruption would leave SENDING for a partition's next owner to send again.
      Effect.all(
        Array.from({ length: LANES }, () =>
          lane(projectId, loop).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterrupts(cause)
                ? Effect.failCause(cause)
                : Effect.logWarning("send loop failed; the sweep restarts it", { projectId }, cause)
            )
          )),
        { concurrency: LANES, discard: true }
      ).pipe(
        Effect.catchCause((cause) => Effect.logWarning("send loop stopped", { projectId }, cause)),
        Effect.ensuring(Effect.sync(() => loops.delete(projectId)))
      )

    /** Makes sure the project's loop runs (or runs another round if it is about to stop). */
    const wake = (projectId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const running = loops.get(projectId)
        if (running) {
          running.dirty = true
          return Effect.void
        }
        const loop: ProjectLoop = { dirty: true, bucket: undefined }
        loops.set(projectId, loop)
        return Effect.asVoid(Effect.forkDetach(runLoop(projectId, loop)))
      })

    /**
     * A partition just taken over: mail its previous owner was sending goes back to the queue (not the mail
     * this process still holds: it was the previous owner, and is still at it). Kept a
     * defect: the worker's takeover (src/actors/PartitionLeases.ts) takes it as infallible; map it when that changes.
     */
    const recoverPartition = (partition: number) =>
      sql`UPDATE emails SET status = 'PENDING' WHERE partition = ${partition} AND status = 'SENDING'
            AND NOT (id = ANY(${pgArray([...held])}::uuid[]))`.pipe(Effect.orDie, Effect.asVoid)

    /**
     * SENDING rows of these (owned) partitions that no round of this process holds: a claim whose answer
     * was lost with its connection (Postgres restarted as it committed) leaves such rows, and nothing
     * else would send them while this worker keeps the leases. Unheld for ORPHAN_AFTER_MS (so the moment
     * between a claim's answer and `held` is never taken for one), they go back to the queue, as a
     * takeover puts them back (recoverPartition).
     */
    const unheldSince = new Map<string, number>()
    const requeueOrphans = (partitions: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const sending = yield* sql<{ id: string }>`
          SELECT id FROM emails WHERE partition IN ${sql.in(partitions)} AND status = 'SENDING'`
        const now = Date.now()
        const unheld = new Set(sending.map((row) => row.id).filter((id) => !held.has(id)))
        for (const id of unheldSince.keys()) if (!unheld.has(id)) unheldSince.delete(id)
        for (const id of unheld) if (!unheldSince.has(id)) unheldSince.set(id, now)
        const orphans = [...unheld].filter((id) => now - unheldSince.get(id)! >= ORPHAN_AFTER_MS)
        if (orphans.length === 0) return
        yield* Effect.logWarning("mail left SENDING by a lost claim goes back to the queue", { emails: orphans.length })
        yield* sql`UPDATE emails SET status = 'PENDING' WHERE id = ANY(${pgArray(orphans)}::uuid[]) AND status = 'SENDING'`
        for (const id of orphans) unheldSince.delete(id)
      })

    /** Wakes the projects of the given partitions that have mail due (retries, missed wake-ups). */
    const sweep = (partitions: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        if (partitions.length === 0) return
        yield* requeueOrphans(partitions)
        const due = yield* sql<{ project_id: string }>`
          SELECT DISTINCT project_id FROM emails
          WHERE partition IN ${sql.in(partitions)} AND status = 'PENDING' AND next_attempt_at <= now()`
        for (const row of due) yield* wake(row.project_id)
      })

    return { wake, recoverPartition, sweep }
  })
