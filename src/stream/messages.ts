/**
 * The messages of stream IN, as one schema: every producer encodes through it (Outbox.append) and the
 * worker decodes with it, dead-lettering what does not decode. `kind` says what a message is about;
 * where it goes (which lane of its project) follows from its content, see `routeOf`.
 */
import { Schema } from "effect"

const Json = Schema.Record(Schema.String, Schema.Unknown)

/** One tracked event as the actor receives it. */
export const TrackedEvent = Schema.Struct({
  eventId: Schema.String,
  contactId: Schema.String,
  /** The api created the contact for this event (so the actor evaluates it against every segment). */
  contactCreated: Schema.optional(Schema.Boolean),
  email: Schema.String,
  name: Schema.String,
  /** Explicit subscription from the request (null: keep). */
  subscribed: Schema.NullOr(Schema.Boolean),
  /** Custom data to store on the contact, and keys to delete from it. */
  set: Json,
  remove: Schema.Array(Schema.String),
  /** Everything the event carries (stored and non-persistent values). */
  data: Json,
  at: Schema.String,
  /**
   * Where the event was in the ingest stream (its envelope's sequence × INGEST_POSITIONS + its index),
   * stamped by the splitter: a lane applies each position once, however often a crashed split is redone.
   */
  pos: Schema.optional(Schema.Number)
})
export type TrackedEvent = typeof TrackedEvent.Type

/** Ingest positions per ingest envelope: an envelope holds at most this many events. */
export const INGEST_POSITIONS = 4096

/**
 * Tracked events of a project: on an ingest subject, as the api grouped them (one PubAck for many
 * requests); on a lane subject, that lane's events of one or more ingest envelopes, split by a worker.
 */
export const TrackMessage = Schema.Struct({
  kind: Schema.Literal("track"),
  projectId: Schema.String,
  events: Schema.Array(TrackedEvent)
})

/** A contact written through the api (or a workflow step): re-evaluate it, emit subscription changes. */
export const ContactMessage = Schema.Struct({
  kind: Schema.Literal("contact"),
  type: Schema.Literals(["contact.created", "contact.updated", "contact.deleted", "contact.field_deleted"]),
  projectId: Schema.String,
  contactId: Schema.optional(Schema.String),
  previousSubscribed: Schema.optional(Schema.NullOr(Schema.Boolean)),
  previousEmail: Schema.optional(Schema.NullOr(Schema.String)),
  setKeys: Schema.optional(Schema.Array(Schema.String)),
  removedKeys: Schema.optional(Schema.Array(Schema.String)),
  contact: Schema.optional(Schema.Struct({ id: Schema.String, email: Schema.String, subscribed: Schema.Boolean })),
  source: Schema.optional(Schema.String),
  /** contact.field_deleted: the field removed from every contact (`data.<key>`). */
  field: Schema.optional(Schema.String),
  at: Schema.String
})

/**
 * An event the service emitted elsewhere (the sender's email.sent, the api's opens and clicks,
 * delivery notifications), fed to the contact's lane so it is recorded and can trigger work. Events an
 * actor emits about its own contacts are recorded in the same batch instead.
 */
export const EmittedEventMessage = Schema.Struct({
  kind: Schema.Literal("event"),
  projectId: Schema.String,
  eventId: Schema.String,
  contactId: Schema.String,
  email: Schema.String,
  name: Schema.String,
  data: Json,
  at: Schema.String
})

const command = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields) =>
  Schema.Struct({
    kind: Schema.Literal("command"),
    projectId: Schema.String,
    commandId: Schema.String,
    type: Schema.Literal(type),
    ...fields
  })

export const CommandMessage = Schema.Union([
  /** Delete every event with this name (each lane its own contacts'), recomputing the segments that read it. */
  command("deleteEvents", {
    name: Schema.String,
    /** Its ingest position, stamped by the splitter (the api publishes it on the ingest subject, see IngestSplitter.ts). */
    pos: Schema.optional(Schema.Number)
  }),
  /** Segment definitions changed (or a recompute was asked for): reload them and backfill what is behind. */
  command("segmentsChanged", {}),
  /** Kept for messages published before lanes: a recompute is now requested on the segment itself. */
  command("computeSegment", { segmentId: Schema.String }),
  /** Take a campaign's next fan-out step (owner lane). */
  command("campaignStep", { campaignId: Schema.String }),
  /** Read one range of an import's file and hand its rows to their contacts' lanes (run by lane `lane`). */
  command("importStep", { jobId: Schema.String, range: Schema.Number, lane: Schema.Number })
])

/** One row of a contact job, as its contact's lane applies it. */
export const BulkRow = Schema.Struct({
  /** The file's row number (header = 1) or, for bulk jobs, the id's position in contactIds (1-based). */
  row: Schema.Number,
  contactId: Schema.String,
  email: Schema.optional(Schema.String),
  /** import: the reader created the contact with this row's data (the lane evaluates it, writes nothing). */
  created: Schema.optional(Schema.Boolean),
  /** import: explicit subscription (null: keep). */
  subscribed: Schema.optional(Schema.NullOr(Schema.Boolean)),
  /** import: custom data to store (empty cells are absent: unchanged). */
  set: Schema.optional(Json)
})
export type BulkRow = typeof BulkRow.Type

/**
 * Rows of a contact job (an import chunk, a bulk subscribe/unsubscribe/delete) for one lane of a project,
 * in order: the lane applies them with its live traffic, and counts them in the job's progress.
 */
export const BulkMessage = Schema.Struct({
  kind: Schema.Literal("bulk"),
  projectId: Schema.String,
  jobId: Schema.String,
  op: Schema.Literals(["import", "subscribe", "unsubscribe", "delete"]),
  lane: Schema.Number,
  /** When the job was accepted. */
  at: Schema.String,
  rows: Schema.Array(BulkRow)
})

/** A durable segment timer came due: re-evaluate the time-dependent segments for one contact at `dueAt`. */
export const TimerMessage = Schema.Struct({
  kind: Schema.Literal("timer"),
  projectId: Schema.String,
  contactId: Schema.String,
  dueAt: Schema.String
})

/** Mail was queued (PENDING rows committed): wake the project's sender (owner lane). */
export const EmailQueuedMessage = Schema.Struct({
  kind: Schema.Literal("email"),
  projectId: Schema.String,
  emailIds: Schema.Array(Schema.String)
})

export const DueTimer = Schema.Struct({
  executionId: Schema.String,
  stepId: Schema.String,
  timerId: Schema.String,
  dueAt: Schema.String
})
export type DueTimer = typeof DueTimer.Type

const workflow = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields) =>
  Schema.Struct({ kind: Schema.Literal("workflow"), projectId: Schema.String, type: Schema.Literal(type), ...fields })

export const WorkflowMessage = Schema.Union([
  /** A workflow was created, edited or deleted: reload the cached definitions (every lane). */
  workflow("changed", {}),
  /** POST /workflows/:id/executions recorded an execution: run it from its TRIGGER step. */
  workflow("advance", { executionId: Schema.String, contactId: Schema.optional(Schema.String) }),
  /** DELAY steps and WAIT_FOR_EVENT timeouts of one lane came due. */
  workflow("timers", { timers: Schema.Array(DueTimer), lane: Schema.optional(Schema.Number) }),
  /** A WEBHOOK step's request succeeded (ok) or failed for good. */
  workflow("webhookDone", {
    executionId: Schema.String,
    stepId: Schema.String,
    contactId: Schema.optional(Schema.String),
    ok: Schema.Boolean,
    error: Schema.optional(Schema.String)
  })
])

export const InMessage = Schema.Union([
  TrackMessage,
  ContactMessage,
  EmittedEventMessage,
  CommandMessage,
  TimerMessage,
  EmailQueuedMessage,
  WorkflowMessage,
  BulkMessage
])
export type InMessage = typeof InMessage.Type
export type TrackMessage = typeof TrackMessage.Type
export type ContactMessage = typeof ContactMessage.Type
export type EmittedEventMessage = typeof EmittedEventMessage.Type
export type CommandMessage = typeof CommandMessage.Type
export type TimerMessage = typeof TimerMessage.Type
export type EmailQueuedMessage = typeof EmailQueuedMessage.Type
export type WorkflowMessage = typeof WorkflowMessage.Type
export type BulkMessage = typeof BulkMessage.Type

/** Where a message goes: one contact's lane, one given lane, the owner lane, or every lane. */
export type Route =
  | { readonly _tag: "contact"; readonly contactId: string }
  | { readonly _tag: "lane"; readonly lane: number }
  | { readonly _tag: "owner" }
  | { readonly _tag: "all" }

const contact = (contactId: string): Route => ({ _tag: "contact", contactId })
const OWNER: Route = { _tag: "owner" }
const ALL: Route = { _tag: "all" }

export const routeOf = (message: InMessage): Route => {
  switch (message.kind) {
    case "track":
      return contact(message.events[0]?.contactId ?? "")
    case "contact":
      return message.contactId ? contact(message.contactId) : ALL
    case "event":
    case "timer":
      return contact(message.contactId)
    case "email":
      return OWNER
    case "command":
      if (message.type === "importStep") return { _tag: "lane", lane: message.lane }
      return message.type === "campaignStep" ? OWNER : ALL
    case "bulk":
      return { _tag: "lane", lane: message.lane }
    case "workflow":
      switch (message.type) {
        case "changed":
          return ALL
        case "timers":
          return message.lane === undefined ? OWNER : { _tag: "lane", lane: message.lane }
        default:
          return message.contactId ? contact(message.contactId) : OWNER
      }
  }
}

/** The subject token for a message's kind (the last token of its subject). */
export type InKind = InMessage["kind"]

/** An emitted event as published on stream OUT (`<prefix>.out.<projectId>.<name>`). */
export interface OutEvent {
  readonly id: string
  readonly projectId: string
  readonly name: string
  readonly contactId: string
  readonly email: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}
