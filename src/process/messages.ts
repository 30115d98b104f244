/**
 * What `all` and its processes say to each other over their IPC channel. Messages arrive untyped, so
 * each side decodes them with these schemas and ignores what does not decode.
 */
import { Schema } from "effect"

const MetricsSnapshot = Schema.Array(Schema.Struct({
  name: Schema.String,
  help: Schema.String,
  type: Schema.Literals(["counter", "gauge", "summary"]),
  values: Schema.Array(Schema.Tuple([Schema.String, Schema.Number]))
}))

/** From a process to `all`: it is up (listening, or its worker started), or its metrics changed. */
export const ChildMessage = Schema.Union([
  Schema.TaggedStruct("Ready", {}),
  Schema.TaggedStruct("Metrics", { snapshot: MetricsSnapshot })
])
export type ChildMessage = typeof ChildMessage.Type

/** From `all` to an api process: a sibling's latest metrics (none: it exited), for /metrics. */
export const PeerMetrics = Schema.TaggedStruct("PeerMetrics", {
  peer: Schema.String,
  snapshot: Schema.optional(MetricsSnapshot)
})
export type PeerMetrics = typeof PeerMetrics.Type

export const decodeChildMessage = Schema.decodeUnknownOption(ChildMessage)
export const decodePeerMetrics = Schema.decodeUnknownOption(PeerMetrics)
