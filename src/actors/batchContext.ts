/**
 * What a lane's batch transaction is given (its actor's lane, lease, segment state and workflow state) and
 * what it answers, shared by every way a batch is applied (applyBatch, combinedBatch, laneSegments).
 */
import { Data } from "effect"
import type { Outbox, OutboxRow } from "../stream/Outbox.ts"
import type { WorkflowRuntime } from "../workflows/Runtime.ts"
import type { WorkflowState } from "../workflows/engine.ts"
import type { LaneFacts } from "./laneFacts.ts"
import type { Pipeline } from "./readAhead.ts"
import type { BackfillCursor } from "./segmentBackfill.ts"
import type { ProjectSegments } from "./segmentDefs.ts"

export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly partition: number }> {}

export interface BatchContext {
  readonly projectId: string
  /**
   * The lane whose messages this actor applies; undefined for the project's messages published before
   * lanes (drained after an upgrade, see upgrade.ts), which may touch any of its contacts.
   */
  readonly lane: number | undefined
  readonly partition: number
  readonly epoch: number
  readonly workerId: string
  readonly outbox: Outbox["Service"]
  /** The actor's segment definitions and pending backfills (kept across batches). */
  readonly segmentState: SegmentState
  /** What the workflow engine needs, and the actor's cached workflow definitions. */
  readonly workflows: { readonly runtime: WorkflowRuntime["Service"]; readonly state: WorkflowState }
  /** The batch's place in its actor's read-ahead, if it takes part (readAhead.ts). */
  readonly pipeline?: Pipeline | undefined
}

export interface Backfill extends BackfillCursor {
  readonly segmentId: string
  cursor: string
  emit: boolean
  /** The segment's backfill_generation this run serves. */
  generation: number
}

export interface SegmentState {
  segments: ProjectSegments | undefined
  backfills: Array<Backfill>
  /**
   * The facts of the lane's contacts kept between combined turns (laneFacts.ts), if any: anything else
   * the lane applies forgets them.
   */
  readonly facts?: LaneFacts | undefined
}

export interface BatchOutcome {
  readonly applied: number
  readonly skipped: number
  readonly eventsInserted: number
  readonly emitted: number
  /** The batch carried queued mail for the project's sender. */
  readonly mailQueued: boolean
  /** Workflow WEBHOOK steps were recorded: wake the webhook runner. */
  readonly webhooksQueued: boolean
  /** The soonest segment timer the batch set (ms), if any. */
  readonly soonestTimerAt?: number | undefined
  /** The batch set workflow timers (DELAY, WAIT_FOR_EVENT timeouts). */
  readonly workflowTimersSet?: boolean | undefined
  /** The batch was tracked events only, applied by one write statement (trackBatch.ts). */
  readonly appliedInOneWrite?: boolean | undefined
  /**
   * Every row the batch appended to the outbox, in order, when it knows them all (a one-write batch);
   * undefined when statements of its own appended rows it does not list: the relay publishes those.
   */
  readonly ownRows?: ReadonlyArray<OutboxRow> | undefined
}
