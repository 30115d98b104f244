/** What a lane actor (ProjectActors.ts) holds between its batches, and the batch it has in flight. */
import type { Deferred, Fiber, Queue } from "effect"
import type { SegmentState, BatchOutcome } from "./batchContext.ts"
import type { ActorItem } from "./messages.ts"
import type { PartitionRun } from "./partitionRun.ts"
import type { WorkflowState } from "../workflows/engine.ts"

export interface Actor {
  readonly key: string
  readonly run: PartitionRun
  readonly lane: number | undefined
  readonly mailbox: Queue.Queue<ActorItem>
  readonly segmentState: SegmentState
  readonly workflowState: WorkflowState
  fiber?: Fiber.Fiber<void>
  /** Inside a transaction (a batch, a backfill chunk): a graceful stop lets it finish. */
  busy: boolean
  /** Started for its lane's unfinished backfills (see resumeBackfills), not by a message. */
  readonly resumingBackfills: boolean
  /**
   * No row this lane's batches appended waits in the outbox for the relay, so the actor may publish its
   * next batch's rows itself without overtaking one. False for a new actor (its predecessor, perhaps on
   * a worker that died, may have left rows), after a batch whose rows the relay publishes, and after a
   * publish that failed; true again once a `drainNow` emptied the outbox. An actor that passivated clear
   * hands that on to its lane's next actor on the same run of the partition.
   */
  outboxClear: boolean
  /** Messages taken from the mailbox to look for a batch to read ahead, not in one: the next batch starts with them. */
  held: Array<ActorItem>
}

/** A batch whose transaction runs in a fiber of its own, so the next one can be read ahead of its commit (readAhead.ts). */
export interface Attempt {
  readonly items: ReadonlyArray<ActorItem>
  readonly fiber: Fiber.Fiber<BatchOutcome, unknown>
  /** Done when the batch's COMMIT goes out, or it ends. */
  readonly committing: Deferred.Deferred<void>
  readonly started: number
  /** It was read ahead of the batch before it. */
  readonly ahead: boolean
  /** It reached its COMMIT (a failure before leaves nothing to read ahead of). */
  reachedCommit: boolean
}

/** The actor a message goes to: its lane's, or the project's for messages published before lanes. */
export const actorKey = (
  projectId: string,
  lane: number | undefined
) => (lane === undefined ? `${projectId}/legacy` : `${projectId}/${lane}`)
