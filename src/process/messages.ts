/**
 * What `all` and its processes say to each other over their IPC channel. Messages arrive untyped, so
 * each side decodes them with these schemas and ignores what does not decode.
 */
import { Schema } from "effect"

/** prom-client's JSON form of a registry (see observability/Metrics.ts `snapshot`), passed through as is. */
const MetricsSnapshot = Schema.Array(Schema.Record(Schema.String, Schema.Unknown))
export type WireMetrics = typeof MetricsSnapshot.Type

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
