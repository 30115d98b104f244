/**
 * What the engine is handed per batch (the batch's events and workflow messages, the actor's context)
 * and what it answers (the flags the actor adds to the batch's outcome).
 */
import { Effect } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { ContactFacts } from "../domain/conditions/evaluate.ts"
import type { WorkflowMessage } from "./messages.ts"
import type { WorkflowRuntime } from "./Runtime.ts"
import type { WorkflowState } from "./definitions.ts"

/** An event of the batch (tracked or emitted), as the engine sees it. */
export interface BatchEvent {
  readonly kind: "event"
  readonly id: string
  readonly contactId: string
  readonly name: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

/** A contact was deleted: its active executions are cancelled. */
export interface ContactDeleted {
  readonly kind: "contactDeleted"
  readonly contactId: string
}

export type WorkflowInput = BatchEvent | WorkflowMessage | ContactDeleted

export interface WorkflowContext {
  readonly projectId: string
  /** The partition of a contact's lane, where its executions, steps and timers are worked on. */
  readonly partitionOf: (contactId: string) => number
  readonly runtime: WorkflowRuntime["Service"]
  readonly state: WorkflowState
  /** Loads contacts' facts for CONDITION steps: the segment engine's loader, handed in by the actor (actors run workflows, not the other way round). */
  readonly loadFacts: FactsLoader
}

export type FactsLoader = (
  projectId: string,
  contactIds: ReadonlyArray<string>,
  eventNames: ReadonlySet<string>,
  windowedNames: ReadonlySet<string>,
  /** Occurrence times of the windowed names only after this (ms); undefined: all of them. */
  since?: number
) => Effect.Effect<ReadonlyMap<string, ContactFacts>, SqlError.SqlError, SqlClient.SqlClient>

export interface WorkflowOutcome {
  readonly mailQueued: boolean
  readonly webhooksQueued: boolean
  /** Executions advanced (started, resumed) in this batch. */
  readonly advanced: number
  /** DELAY / WAIT_FOR_EVENT timers were set. */
  readonly timersSet?: boolean
}

export const NOTHING: WorkflowOutcome = { mailQueued: false, webhooksQueued: false, advanced: 0, timersSet: false }
