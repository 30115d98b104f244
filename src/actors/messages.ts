/** What the worker reads from stream IN, decoded (the schema is stream/messages.ts). */
import type { InMessage } from "../stream/messages.ts"

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
