/** What the worker reads from stream IN, decoded. */
import type { TrackedEvent } from "../ingest/EventPublisher.ts"
import type { WorkflowMessage } from "../workflows/messages.ts"

export interface ContactChangeMessage {
  readonly kind: "contact"
  readonly type: "contact.created" | "contact.updated" | "contact.deleted" | "contact.field_deleted"
  readonly projectId: string
  readonly contactId?: string
  readonly previousSubscribed?: boolean | null
  readonly contact?: { readonly id: string; readonly email: string; readonly subscribed: boolean }
  readonly source?: string
  /** contact.field_deleted: the field removed from every contact (`data.<key>`). */
  readonly field?: string
  readonly at: string
}

/** An event the service emitted, fed back so it is recorded and can trigger work for the project. */
export interface EmittedEventMessage {
  readonly kind: "event"
  readonly projectId: string
  readonly eventId: string
  readonly contactId: string
  readonly email: string
  readonly name: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

export type CommandMessage =
  | { readonly kind: "command"; readonly projectId: string; readonly commandId: string; readonly type: "deleteEvents"; readonly name: string }
  /** A segment was created, edited or deleted: reload definitions and backfill what is behind. */
  | { readonly kind: "command"; readonly projectId: string; readonly commandId: string; readonly type: "segmentsChanged" }
  /** POST /segments/:id/compute: recompute membership and emit entry/exit. */
  | { readonly kind: "command"; readonly projectId: string; readonly commandId: string; readonly type: "computeSegment"; readonly segmentId: string }
  /** Take a campaign's next fan-out step (freeze a page of its audience, or queue a page of its mail). */
  | { readonly kind: "command"; readonly projectId: string; readonly commandId: string; readonly type: "campaignStep"; readonly campaignId: string }

/** A durable timer came due: re-evaluate the time-dependent segments for one contact at exactly `dueAt`. */
export interface TimerMessage {
  readonly kind: "timer"
  readonly projectId: string
  readonly contactId: string
  readonly dueAt: string
}

/** Mail was queued (PENDING rows committed): wake the project's sender. */
export interface EmailQueuedMessage {
  readonly kind: "email"
  readonly projectId: string
  readonly emailIds: ReadonlyArray<string>
}

export interface TrackMessage {
  readonly kind: "track"
  readonly projectId: string
  readonly events: ReadonlyArray<TrackedEvent>
}

export type InMessage =
  | TrackMessage
  | ContactChangeMessage
  | EmittedEventMessage
  | CommandMessage
  | TimerMessage
  | EmailQueuedMessage
  | WorkflowMessage

/** A message with its place in the stream. */
export interface Delivered {
  readonly seq: number
  readonly partition: number
  readonly body: InMessage
}
