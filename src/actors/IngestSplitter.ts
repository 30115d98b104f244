/**
 * The ingest splitter: turns the api's ingest envelopes (one per project per flush, on
 * `<prefix>.ingest.<partition>.<project>.track`) into lane messages, on the worker that leases the
 * ingest partition.
 *
 * Why: with lanes, an api that published per lane sent one small message (one PubAck) per lane a
 * flush touched, about one per request, and /v1/track fell to 0.67× of a bare INSERT server. The api
 * now publishes one envelope per project; the splitter takes every envelope waiting for it at once,
 * so under load one lane message carries the lane's events of many envelopes.
 *
 * Exactly once: each event is stamped with its ingest position (envelope sequence × INGEST_POSITIONS +
 * index). Envelopes are acked, and the partition's ingest watermark moves, only after every lane
 * message made from them is stored; a split redone after a crash or a takeover republishes the same
 * positions, which the lane skips (lane_offsets.ingest_pos, see applyBatch). A lane's events all come
 * from its project's one ingest partition, split in order, so its positions only grow.
 */
import type { Lanes } from "../stream/lanes.ts"
import { laneSubject } from "../stream/lanes.ts"
import { INGEST_POSITIONS, type TrackedEvent } from "../stream/messages.ts"

export interface IngestEnvelope {
  readonly seq: number
  readonly projectId: string
  readonly events: ReadonlyArray<TrackedEvent>
}

export interface LaneMessage {
  readonly subject: string
  readonly json: string
  /** Deterministic: the same events split again are dropped by JetStream's duplicate window too. */
  readonly msgID: string
}

/** The ingest position of the `index`th event of the envelope at stream sequence `seq`. */
export const ingestPosition = (seq: number, index: number): number => seq * INGEST_POSITIONS + index

/**
 * Splits envelopes (in stream order) into lane messages of at most `maxBytes` (an event alone may
 * exceed it), each lane's events in order, stamped with their positions.
 */
export const splitEnvelopes = (
  prefix: string,
  lanes: Lanes,
  envelopes: ReadonlyArray<IngestEnvelope>,
  maxBytes: number
): Array<LaneMessage> => {
  const byLane = new Map<string, { projectId: string; lane: number; events: Array<{ json: string; pos: number }> }>()
  for (const envelope of envelopes) {
    envelope.events.forEach((event, index) => {
      const lane = lanes.laneOf(event.contactId)
      const key = `${envelope.projectId}/${lane}`
      let group = byLane.get(key)
      if (!group) byLane.set(key, group = { projectId: envelope.projectId, lane, events: [] })
      const pos = ingestPosition(envelope.seq, index)
      group.events.push({ json: JSON.stringify({ ...event, pos }), pos })
    })
  }
  const out: Array<LaneMessage> = []
  for (const { projectId, lane, events } of byLane.values()) {
    const subject = laneSubject(prefix, lanes, projectId, lane, "track")
    let current: Array<{ json: string; pos: number }> = []
    let bytes = 0
    const close = () => {
      if (current.length === 0) return
      out.push({
        subject,
        json: `{"kind":"track","projectId":${JSON.stringify(projectId)},"events":[${current.map((event) => event.json).join(",")}]}`,
        msgID: `ingest:${projectId}:${lane}:${current[0]!.pos}:${current[current.length - 1]!.pos}`
      })
      current = []
      bytes = 0
    }
    for (const event of events) {
      const size = Buffer.byteLength(event.json)
      if (current.length > 0 && bytes + size > maxBytes) close()
      current.push(event)
      bytes += size + 1
    }
    close()
  }
  return out
}
