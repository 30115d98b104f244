/** What the worker reads from stream IN, decoded (the schema is stream/messages.ts). */
import type { JsMsg } from "@nats-io/jetstream"
import type { InMessage } from "../stream/messages.ts"
import type { PartitionRun } from "./partitionRun.ts"

export type {
  CommandMessage,
  ContactMessage as ContactChangeMessage,
  EmailQueuedMessage,
  EmittedEventMessage,
  InMessage,
  TimerMessage,
  TrackMessage
} from "../stream/messages.ts"

/** A message with its place in the stream. */
export interface Delivered {
  readonly seq: number
  readonly partition: number
  /** The lane it was published to (undefined: published before lanes, for the whole project). */
  readonly lane: number | undefined
  readonly body: InMessage
}

/** A delivered message on its way through a lane actor: acked once applied, on the partition run it came on. */
export interface ActorItem {
  readonly delivered: Delivered
  readonly message: JsMsg
  readonly run: PartitionRun
}
