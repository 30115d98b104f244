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
 *
 * Event deletes (DELETE /events/:name) travel the same way, so they stay ordered with the events: the
 * splitter gives every lane of the project the command, positioned, between the events around it.
 */
import type { Lanes } from "../stream/lanes.ts"
import { laneSubject } from "../stream/lanes.ts"
import { INGEST_POSITIONS, type TrackedEvent } from "../stream/messages.ts"

export interface IngestEnvelope {
  readonly seq: number
  readonly projectId: string
  readonly events: ReadonlyArray<TrackedEvent>
}

/**
 * A project-wide command published on the ingest subject (DELETE /events/:name), so that it is ordered
 * with the tracked events the api accepted before and after it: the splitter hands it to every lane of
 * the project at its place among the events, stamped with its ingest position like an event.
 */
export interface IngestCommand {
  readonly seq: number
  readonly projectId: string
  readonly command: { readonly kind: "command"; readonly type: "deleteEvents"; readonly [field: string]: unknown }
}

export type IngestItem = IngestEnvelope | IngestCommand

export interface LaneMessage {
  /** `<projectId>/<lane>`: a lane's messages must be published one after the other, in this order. */
  readonly lane: string
  readonly subject: string
  readonly json: string
  /** Deterministic: the same events split again are dropped by JetStream's duplicate window too. */
  readonly msgID: string
}

/** The ingest position of the `index`th event of the envelope at stream sequence `seq`. */
export const ingestPosition = (seq: number, index: number): number => seq * INGEST_POSITIONS + index

type LaneEntry = { readonly json: string; readonly pos: number; readonly command: boolean }

/**
 * Splits envelopes and commands (in stream order) into lane messages: each lane's events in order, cut
 * into track messages of at most `maxBytes` (an event alone may exceed it), and each command in its
 * place between them; everything stamped with its position.
 */
export const splitEnvelopes = (
  prefix: string,
  lanes: Lanes,
  items: ReadonlyArray<IngestItem>,
  maxBytes: number
): Array<LaneMessage> => {
  const byLane = new Map<string, { projectId: string; lane: number; entries: Array<LaneEntry> }>()
  const groupOf = (projectId: string, lane: number) => {
    const key = `${projectId}/${lane}`
    let group = byLane.get(key)
    if (!group) byLane.set(key, group = { projectId, lane, entries: [] })
    return group
  }
  for (const item of items) {
    if ("command" in item) {
      const pos = ingestPosition(item.seq, 0)
      const json = JSON.stringify({ ...item.command, projectId: item.projectId, pos })
      for (let lane = 0; lane < lanes.count; lane++) groupOf(item.projectId, lane).entries.push({ json, pos, command: true })
      continue
    }
    item.events.forEach((event, index) => {
      const pos = ingestPosition(item.seq, index)
      groupOf(item.projectId, lanes.laneOf(event.contactId)).entries.push({ json: JSON.stringify({ ...event, pos }), pos, command: false })
    })
  }
  const out: Array<LaneMessage> = []
  for (const [key, { projectId, lane, entries }] of byLane) {
    const subject = laneSubject(prefix, lanes, projectId, lane, "track")
    let current: Array<LaneEntry> = []
    let bytes = 0
    const close = () => {
      if (current.length === 0) return
      out.push({
        lane: key,
        subject,
        json: `{"kind":"track","projectId":${JSON.stringify(projectId)},"events":[${current.map((event) => event.json).join(",")}]}`,
        msgID: `ingest:${projectId}:${lane}:${current[0]!.pos}:${current[current.length - 1]!.pos}`
      })
      current = []
      bytes = 0
    }
    for (const entry of entries) {
      if (entry.command) {
        close()
        out.push({
          lane: key,
          subject: laneSubject(prefix, lanes, projectId, lane, "command"),
          json: entry.json,
          msgID: `ingest:${projectId}:${lane}:command:${entry.pos}`
        })
        continue
      }
      const size = Buffer.byteLength(entry.json)
      if (current.length > 0 && bytes + size > maxBytes) close()
      current.push(entry)
      bytes += size + 1
    }
    close()
  }
  return out
}
