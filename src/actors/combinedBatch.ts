/**
 * Several lanes' batches of tracked events, of one project, applied in ONE transaction: one head statement
 * (every lane's lease and offset, the reset watermark, all their contacts locked, their facts, the events
 * already stored), each lane folded and evaluated in memory with its own segments (trackBatch.ts), one
 * write statement for all of them (their lane offsets included), one COMMIT.
 *
 * A lane's batch costs four round trips and a fixed amount of work whatever its size (the head planned,
 * the write's triggers, the commit): under load a worker's lanes each have a few events ready at once, so
 * taking them together pays that once per turn instead of once per lane (see laneTurns.ts).
 *
 * Lanes stay the unit of ownership and order: a contact is in one lane, so the lanes' contacts are
 * disjoint and each lane's events are folded in its own order. A lane this path cannot take (its lease
 * gone, a contact missing, anything but tracked events left once the already-applied messages are skipped)
 * is answered `undefined` and nothing of it is written, not even its offset: its actor applies the batch
 * alone (applyBatch.ts), which handles every case.
 */
import { Clock, Data, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import type { TrackedEvent } from "../stream/messages.ts"
import type { BatchContext, BatchOutcome } from "./batchContext.ts"
import { batchHeadSql, combinedHeadParts } from "../store/engine/batchHead.ts"
import type { LockedContact } from "../store/engine/contacts.ts"
import type { FactRow } from "../store/engine/facts.ts"
import { movedOffsetsCte } from "../store/engine/offsets.ts"
import type { Delivered } from "./messages.ts"
import { newInBatch } from "./batchHead.ts"
import { type CachedFacts, cachedPart, withCached } from "./laneFacts.ts"
import { factNames } from "./segmentDefs.ts"
import { factsOf } from "./segmentFacts.ts"
import { type ContactTouch, finishTrackedBatch, planTrackedBatch, type TrackedPlan, trackedWriteSql } from "./trackBatch.ts"

/** A lane's kept facts were read before the project's last reset: the turn is given up. */
export class FactsOutdated extends Data.TaggedError("FactsOutdated")<{ readonly lane: number }> {}

/** One lane's batch, with its actor's context. */
export interface LaneBatch {
  readonly context: BatchContext
  readonly batch: ReadonlyArray<Delivered>
}

/**
 * Messages a turn takes besides tracked events: an event emitted elsewhere about a contact (the sender's
 * email.sent, an open, a click: recorded as a tracked event without changes would be), the api's write of
 * a contact (created or updated: evaluated against every segment, its subscription change emitted) and the
 * note that mail was queued. Each needs its contact found by the email it names (else the lane applies alone).
 */
const takenAlongside = (body: Delivered["body"]): boolean =>
  (body.kind === "event" && body.email !== "") || body.kind === "email" ||
  (body.kind === "contact" && (body.type === "contact.created" || body.type === "contact.updated") &&
    body.contactId !== undefined && body.contact !== undefined && body.contact.id === body.contactId)

/** The email a message's contact is locked by, when it names one. */
const emailOf = (body: Delivered["body"]): string | undefined =>
  body.kind === "event" ? body.email : body.kind === "contact" ? body.contact?.email : undefined

/**
 * Whether a lane's batch may be taken with others: tracked events (with the messages `takenAlongside` them)
 * only, its actor's segments loaded and no backfill pending.
 */
export const combinable = (context: BatchContext, batch: ReadonlyArray<Delivered>): boolean =>
  context.lane !== undefined && context.pipeline === undefined && context.segmentState.segments !== undefined &&
  context.segmentState.backfills.length === 0 && batch.length > 0 &&
  batch.every((message) => message.body.kind === "track" || takenAlongside(message.body))

interface HeadData {
  readonly leases: ReadonlyArray<number>
  readonly offsets: ReadonlyArray<readonly [number, string, string | null]>
  readonly reset_seq: string | null
}

/** The highest ingest position a lane's tracked messages carry (IngestSplitter.ts). */
const ingestPosOf = (batch: ReadonlyArray<Delivered>) => {
  let pos = 0
  for (const message of batch)
    if (message.body.kind === "track") { for (const event of message.body.events) pos = Math.max(pos, event.pos ?? 0) }
  return pos
}

/**
 * Applies the lanes' batches (one project's; each lane at most once) in one transaction. Answers, lane by
 * lane, its outcome, or undefined for a lane left for its actor to apply alone. Fails (nothing written)
 * when the transaction does.
 */
export const applyCombined = Effect.fnUntraced(function*(lanes: ReadonlyArray<LaneBatch>) {
  const sql = yield* SqlClient.SqlClient
  const first = lanes[0]!.context
  const { projectId, workerId } = first
  return yield* sql.withTransaction(Effect.gen(function*() {
    // The lane that takes each email. Lanes' contacts are disjoint, but an email can turn up in two lanes
    // (its contact deleted and created again under an id of another lane while an event for it waited):
    // the second lane is then left to apply its batch alone, after this one.
    const laneOfEmail = new Map<string, number>()
    const eventIds: Array<string> = []
    // The facts the lanes kept of their contacts (by the api's contact id): the head reads the others'.
    const known = new Map<string, CachedFacts>()
    // Contacts the api wrote: their kept facts are out of date, the head reads them again.
    const written = new Set<string>()
    for (const [index, { context, batch }] of lanes.entries()) {
      const kept = context.segmentState.facts
      for (const message of batch) {
        if (message.body.kind !== "track") {
          const email = emailOf(message.body)
          if (email !== undefined && !laneOfEmail.has(email)) laneOfEmail.set(email, index)
          if (message.body.kind === "event") {
            eventIds.push(message.body.eventId)
            if (kept?.resetSeq !== undefined && !known.has(message.body.contactId)) {
              const facts = kept.get(message.body.contactId)
              if (facts) known.set(message.body.contactId, facts)
            }
          }
          if (message.body.kind === "contact" && message.body.contactId !== undefined) written.add(message.body.contactId)
          continue
        }
        for (const event of message.body.events) {
          if (!laneOfEmail.has(event.email)) laneOfEmail.set(event.email, index)
          eventIds.push(event.eventId)
          if (kept?.resetSeq !== undefined && !known.has(event.contactId)) {
            const facts = kept.get(event.contactId)
            if (facts) known.set(event.contactId, facts)
          }
        }
      }
    }
    for (const contactId of written) known.delete(contactId)
    const emails = laneOfEmail.keys()
    // What any of the lanes' segments read (their definitions may differ for a moment after an edit).
    const eventNames = new Set<string>()
    const windowed = new Set<string>()
    let longestWindowMs = 0
    for (const { context } of lanes) {
      const names = factNames(context.segmentState.segments!)
      for (const name of names.eventNames) eventNames.add(name)
      for (const name of names.windowed) windowed.add(name)
      longestWindowMs = Math.max(longestWindowMs, names.longestWindowMs)
    }
    const since = windowedSince(yield* Clock.currentTimeMillis, longestWindowMs)
    const leases = new Map(lanes.map(({ context }) => [context.partition, context.epoch]))
    const rows = yield* batchHeadSql(sql, {
      projectId,
      ...combinedHeadParts(sql, projectId, workerId, leases, lanes.map(({ context }) => context.lane)),
      emails: [...emails],
      eventIds,
      facts: { eventNames, windowed, since, known: [...known.keys()] }
    })
    const headRow = rows.find((row) => row.kind === "h")
    const head = (typeof headRow?.data === "string" ? JSON.parse(headRow.data) : headRow?.data) as HeadData
    const held = new Set(head.leases)
    const offsets = new Map(
      head.offsets.map(([lane, applied, pos]) => [lane, { applied: Number(applied), pos: pos === null ? 0 : Number(pos) }])
    )
    const resetSeq = head.reset_seq === null ? 0 : Number(head.reset_seq)
    const locked = new Map<string, LockedContact>()
    const stored = new Set<string>()
    for (const row of rows) {
      if (row.kind === "c") {
        locked.set(row.name, {
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
    // Kept facts were read before a reset of the project that this head sees: give the turn up (its lanes,
    // applied alone, read everything again).
    for (const { context } of lanes) {
      const kept = context.segmentState.facts
      if (kept?.resetSeq !== undefined && kept.resetSeq !== resetSeq) return yield* new FactsOutdated({ lane: context.lane! })
    }
    const facts = factsOf(rows as ReadonlyArray<FactRow>)
    for (const [contactId, cached] of known) {
      const row = facts.get(contactId)
      if (row) facts.set(contactId, withCached(row, cached, since))
    }

    const clock = yield* Clock.currentTimeMillis
    const now = new Date().toISOString()
    const results: Array<BatchOutcome | undefined> = []
    const plans: Array<TrackedPlan> = []
    const moved: Array<{ lane: number; seq: number; pos: number }> = []
    for (const [index, { context, batch }] of lanes.entries()) {
      if (!held.has(context.partition)) {
        // Its actor finds the lease lost by itself.
        results.push(undefined)
        continue
      }
      const offset = offsets.get(context.lane!) ?? { applied: 0, pos: 0 }
      const { fresh, unseen } = newInBatch(batch, { appliedSeq: offset.applied, ingestPos: offset.pos, resetSeq })
      const outcome = {
        applied: fresh.length,
        skipped: batch.length - fresh.length,
        eventsInserted: 0,
        emitted: 0,
        mailQueued: false,
        webhooksQueued: false
      }
      const tracked: Array<TrackedEvent> = []
      const touches: Array<ContactTouch> = []
      let takeable = true
      /** The message's contact is the one locked by its email, and this lane takes that email. */
      const found = (email: string, contactId: string) => locked.get(email)?.id === contactId && laneOfEmail.get(email) === index
      for (const message of fresh) {
        const body = message.body
        switch (body.kind) {
          case "track":
            for (const event of body.events) {
              if (!locked.has(event.email) || laneOfEmail.get(event.email) !== index) takeable = false
              if (unseen(event)) tracked.push(event)
            }
            break
          case "event":
            // Recorded as a tracked event that changes nothing on its contact would be.
            if (!found(body.email, body.contactId)) takeable = false
            tracked.push({
              eventId: body.eventId,
              contactId: body.contactId,
              email: body.email,
              name: body.name,
              subscribed: null,
              set: {},
              remove: [],
              data: body.data,
              at: body.at
            })
            break
          case "email":
            // The rows are already committed as PENDING; the sender picks them up after this batch.
            outcome.mailQueued = true
            break
          case "contact": {
            const contact = body.contact!
            if (!found(contact.email, contact.id)) takeable = false
            touches.push({
              contactId: contact.id,
              at: body.at,
              emitted: typeof body.previousSubscribed === "boolean" && body.previousSubscribed !== contact.subscribed
                ? {
                  name: contact.subscribed ? "contact.subscribed" : "contact.unsubscribed",
                  contactId: contact.id,
                  email: contact.email,
                  at: body.at,
                  source: body.source ?? "api"
                }
                : undefined
            })
            break
          }
          default:
            takeable = false
        }
        if (!takeable) break
      }
      if (!takeable) {
        results.push(undefined)
        continue
      }
      moved.push({ lane: context.lane!, seq: Math.max(...batch.map((message) => message.seq)), pos: ingestPosOf(batch) })
      if (fresh.length === 0) {
        results.push({ ...outcome, ownRows: [] })
        continue
      }
      const laneEmails = new Set(tracked.map((event) => event.email))
      for (const message of fresh) if (message.body.kind === "contact") laneEmails.add(message.body.contact!.email)
      const contacts = [...laneEmails].map((email) => locked.get(email)!)
      const plan = planTrackedBatch(
        context,
        context.segmentState.segments!,
        tracked,
        { contacts, facts, stored },
        outcome,
        clock,
        now,
        touches
      )
      plans.push(plan)
      results.push(outcome)
    }
    if (moved.length === 0) return { results, keep: () => {} }
    const offsetsPart = movedOffsetsCte(sql, projectId, moved)
    const inserted = yield* trackedWriteSql(sql, first, plans, now, [offsetsPart])
    const insertedIds = new Set(inserted.map((row) => row.id))
    for (const plan of plans) yield* finishTrackedBatch(plan, insertedIds)
    /** Once committed: each lane keeps its contacts' facts as the turn left them. */
    const keep = () => {
      for (const plan of plans) {
        const kept = plan.context.segmentState.facts
        const segments = plan.context.segmentState.segments!
        // No segment reads them: nothing worth keeping (a campaign's email.sent events would otherwise fill
        // the cache with empty facts, a KiB each, and the worker's heap with it).
        if (!kept || segments.byId.size === 0) continue
        const canonical = (segmentId: string) => segments.byId.get(segmentId)?.id ?? segmentId
        for (const contact of plan.contacts) {
          const contactFacts = facts.get(contact.id)
          if (contactFacts) kept.set(contact.id, known.get(contact.id) ?? cachedPart(contactFacts, canonical))
        }
        kept.resetSeq = resetSeq
      }
      const planned = plans.reduce((sum, plan) => sum + plan.contacts.length, 0)
      WorkerMetrics.factsKept.inc(known.size, { source: "kept" })
      WorkerMetrics.factsKept.inc(Math.max(0, planned - known.size), { source: "read" })
    }
    return { results, keep }
  })).pipe(
    // Facts may have been folded in place: the lanes read them again.
    Effect.onError(() => Effect.sync(() => lanes.forEach(({ context }) => context.segmentState.facts?.forget()))),
    Effect.map(({ results, keep }) => {
      keep()
      return results
    })
  )
})
