/**
 * What a worker keeps of its lanes' contacts (src/actors/laneFacts.ts) stays bounded by what the segments
 * read: a project without segments keeps nothing however many contacts its turns touch (a campaign's
 * email.sent events once filled the cache with empty facts, a KiB each: the worker's memory grew through
 * every large campaign), and the same turns on a project with segments do keep their contacts' facts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { applyBatch } from "../../src/actors/applyBatch.ts"
import type { BatchContext } from "../../src/actors/batchContext.ts"
import { applyCombined } from "../../src/actors/combinedBatch.ts"
import { makeFactsCache } from "../../src/actors/laneFacts.ts"
import { reloadSegments } from "../../src/actors/laneSegments.ts"
import type { Delivered } from "../../src/actors/messages.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { WorkflowRuntime } from "../../src/workflows/Runtime.ts"
import { BatchRuntime, createContacts, createSegments, laneContext, leaseFor } from "../support/actorFixtures.ts"
import { insertProject } from "../support/database.ts"

const LANES = [2, 9]
const CONTACTS = 20

/** Combined turns of email.sent events (as the sender emits them) to every contact of two lanes: what the cache holds after. */
const keptAfterSending = (withSegments: boolean) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const runtime = yield* WorkflowRuntime
    const cache = makeFactsCache(10_000)
    const projectId = yield* insertProject
    if (withSegments) yield* createSegments(projectId)
    let seq = 0
    const turn: Array<{ context: BatchContext; batch: Array<Delivered> }> = []
    for (const lane of LANES) {
      const partition = outbox.lanes.partitionOf(projectId, lane)
      yield* leaseFor(partition)
      const contacts = yield* createContacts(projectId, outbox.lanes.count, lane, CONTACTS)
      const context = laneContext({ projectId, lane, partition, facts: cache.lane() }, outbox, runtime)
      yield* reloadSegments(context, context.segmentState)
      const batch = contacts.map((contact): Delivered => ({
        seq: ++seq,
        partition,
        lane,
        body: {
          kind: "event",
          projectId,
          eventId: uuidv7(),
          contactId: contact.id,
          email: contact.email,
          name: "email.sent",
          data: {},
          at: new Date().toISOString()
        }
      }))
      turn.push({ context, batch })
    }
    const outcomes = yield* applyCombined(turn)
    for (const [i, outcome] of outcomes.entries()) {
      expect(outcome, `lane ${LANES[i]} applied in the combined turn`).toBeDefined()
      if (outcome === undefined) yield* applyBatch(turn[i]!.context, turn[i]!.batch)
    }
    return cache.size()
  })

layer(BatchRuntime, { timeout: 60_000 })("facts kept between turns, bounded by what segments read", (it) => {
  describe("email events to many contacts", () => {
    it.effect("keep nothing for a project without segments, and every contact's facts for one with segments", () =>
      Effect.gen(function*() {
        expect(yield* keptAfterSending(false)).toBe(0)
        expect(yield* keptAfterSending(true)).toBe(LANES.length * CONTACTS)
      }))
  })
})
