/**
 * Applies one batch of a project's stream messages in one Postgres transaction:
 * events (insert, skipping ids already stored) and their per-contact aggregates, contact changes
 * carried by tracked events (data patches and subscription, in order), emitted events into the
 * outbox, commands (delete events by name), and the project's applied stream sequence. The
 * partition's lease is checked (and share-locked) in the same transaction, so a worker that lost
 * its lease cannot commit.
 *
 * Its head statement (batchHead.ts) reads the lease, the offset and the batch's contacts; a batch of
 * tracked events only is then applied in one write (trackBatch.ts), any other statement by statement
 * (generalBatch.ts).
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import type { TrackedEvent } from "../ingest/EventPublisher.ts"
import type { OutboxRow } from "../stream/Outbox.ts"
import { batchHeadSql, laneHeadParts } from "../store/engine/batchHead.ts"
import type { LockedContact } from "../store/engine/contacts.ts"
import type { FactRow } from "../store/engine/facts.ts"
import { newInBatch } from "./batchHead.ts"
import { applyTrackedBatch } from "./trackBatch.ts"
import type { Delivered } from "./messages.ts"
import { ReadAheadAbandoned } from "./readAhead.ts"
import { factNames } from "./segmentDefs.ts"
import { factsOf } from "./segmentFacts.ts"
import { applyGeneralBatch } from "./generalBatch.ts"
import { reloadSegments } from "./laneSegments.ts"
import { type BatchContext, LeaseLost } from "./batchContext.ts"

export const applyBatch = Effect.fnUntraced(function*(context: BatchContext, batch: ReadonlyArray<Delivered>) {
  const sql = yield* SqlClient.SqlClient
  // Whatever it changes, the lane's facts are read from Postgres again after it.
  context.segmentState.facts?.forget()
  return yield* sql.withTransaction(
    Effect.gen(function*() {
      // One round trip (store/engine/batchHead.ts): the lease (share-locked: a takeover waits for this batch), the
      // lane's offset as it was, and the offset moved past the batch (its highest sequence; what it skips is below the offset).
      const batchEnd = Math.max(...batch.map((message) => message.seq))
      // The highest ingest position the batch carries (events split from ingest envelopes, IngestSplitter.ts).
      let batchPos = 0
      for (const message of batch) {
        if (message.body.kind === "track") { for (const event of message.body.events) batchPos = Math.max(batchPos, event.pos ?? 0) }
        if (message.body.kind === "command" && message.body.type === "deleteEvents") batchPos = Math.max(batchPos, message.body.pos ?? 0)
      }
      // The project's reset watermark too (share-locked: a batch and a reset of its project wait for each other).
      // And the contacts of the batch's tracked events, locked (in id order, as every locker does): the
      // first fold of tracked events starts from them without a round trip of its own.
      const trackedEmails = [
        ...new Set(batch.flatMap((message) => message.body.kind === "track" ? message.body.events.map((event) => event.email) : []))
      ]
      // A batch of tracked events only is applied in one write (trackBatch.ts): its head also reads what
      // the segments read about its contacts, and which of its events are already stored.
      const segmentsLoaded = context.segmentState.segments
      const withFacts = segmentsLoaded !== undefined && batch.every((message) => message.body.kind === "track")
      const names = segmentsLoaded
        ? factNames(segmentsLoaded)
        : { eventNames: new Set<string>(), windowed: new Set<string>(), longestWindowMs: 0 }
      // A tracked batch evaluates at the clock as it is after the head, so no later than this.
      const since = windowedSince(yield* Clock.currentTimeMillis, names.longestWindowMs)
      const eventIds = withFacts
        ? batch.flatMap((message) => message.body.kind === "track" ? message.body.events.map((event) => event.eventId) : [])
        : []
      const rows = yield* batchHeadSql(sql, {
        projectId: context.projectId,
        ...laneHeadParts(sql, context, batchEnd, batchPos),
        emails: trackedEmails,
        eventIds,
        facts: withFacts ? { ...names, since } : undefined
      })
      const headRow = rows.find((row) => row.kind === "h")
      const head = (typeof headRow?.data === "string" ? JSON.parse(headRow.data) : headRow?.data) as {
        applied_seq: string | null
        ingest_pos: string | null
        reset_seq: string | null
      }
      const after = context.pipeline?.after
      if (after) {
        // Read ahead (readAhead.ts): the head waited for the batch before this one to end; go on only if it committed.
        if (!(yield* after.committed)) return yield* new ReadAheadAbandoned({ reason: "previous-failed" })
        if (Number(head.applied_seq ?? 0) < after.through) return yield* new ReadAheadAbandoned({ reason: "offset-behind" })
      }
      if (headRow?.subscribed !== true) return yield* new LeaseLost({ partition: context.partition })
      const lockedRows: Array<LockedContact> = []
      const stored = new Set<string>()
      for (const row of rows) {
        if (row.kind === "c") {
          lockedRows.push({
            id: row.contact_id,
            email: row.name,
            subscribed: row.subscribed === true,
            pinned_at: row.pins ?? {},
            data: row.data as LockedContact["data"]
          })
        } else if (row.kind === "e") {
          stored.add(row.contact_id)
        }
      }
      const { fresh, unseen } = newInBatch(batch, {
        appliedSeq: head.applied_seq === null ? 0 : Number(head.applied_seq),
        ingestPos: head.ingest_pos === null ? 0 : Number(head.ingest_pos),
        resetSeq: head.reset_seq === null ? 0 : Number(head.reset_seq)
      })
      const outcome: {
        applied: number
        skipped: number
        eventsInserted: number
        emitted: number
        mailQueued: boolean
        webhooksQueued: boolean
        soonestTimerAt?: number | undefined
        workflowTimersSet?: boolean | undefined
        appliedInOneWrite?: boolean | undefined
        ownRows?: ReadonlyArray<OutboxRow> | undefined
      } = {
        applied: fresh.length,
        skipped: batch.length - fresh.length,
        eventsInserted: 0,
        emitted: 0,
        mailQueued: false,
        webhooksQueued: false
      }
      if (fresh.length === 0) {
        // An actor's first batch loads its segments, which queues its lane's backfills, even when all of it
        // was applied before (redelivered to a partition's new owner): a lane may get nothing else.
        if (context.segmentState.segments === undefined) yield* reloadSegments(context, context.segmentState)
        outcome.ownRows = []
        return outcome
      }
      const lockedEmails = new Set(lockedRows.map((row) => row.email))
      if (
        withFacts && segmentsLoaded &&
        fresh.every((message) => message.body.kind === "track" && message.body.events.every((event) => lockedEmails.has(event.email)))
      ) {
        const tracked: Array<TrackedEvent> = []
        for (const message of fresh)
          if (message.body.kind === "track") { for (const event of message.body.events) if (unseen(event)) tracked.push(event) }
        return yield* applyTrackedBatch(context, segmentsLoaded, tracked, {
          contacts: lockedRows,
          facts: factsOf(rows as ReadonlyArray<FactRow>),
          stored
        }, outcome)
      }

      return yield* applyGeneralBatch(context, { fresh, prelocked: lockedRows, unseen, outcome })
    }).pipe(
      // The body is done, COMMIT comes next: the lane's next batch may be read ahead from here (readAhead.ts).
      // Later would not overlap the commit; earlier, the next batch would leave out what arrives meanwhile.
      Effect.tap(() => context.pipeline?.committing ?? Effect.void)
    )
  )
})
