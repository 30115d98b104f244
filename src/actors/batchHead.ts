/** What of a lane's batch is new, after its head statement (store/engine/batchHead.ts). */
import { INGEST_POSITIONS } from "../stream/messages.ts"

/**
 * What of a lane's batch is new, given what its head read: the messages beyond everything applied so far
 * (in this batch too: a redelivered copy of an earlier message is skipped as well) and after the
 * project's last reset; and `unseen`, which tells whether an event (or event delete) at its ingest position
 * is new to the lane and marks it seen. Events split again after a splitter crashed or moved come back in
 * new lane messages: each ingest position is applied once (they only grow within a lane); an event whose
 * envelope was queued before the project's last reset is skipped like any message from before it.
 */
export const newInBatch = <M extends { readonly seq: number }>(
  batch: ReadonlyArray<M>,
  read: { readonly appliedSeq: number; readonly ingestPos: number; readonly resetSeq: number }
) => {
  let highest = Math.max(read.appliedSeq, read.resetSeq)
  const fresh = batch.filter((message) => {
    if (message.seq <= highest) return false
    highest = message.seq
    return true
  })
  let ingestPos = read.ingestPos
  const unseen = ({ pos }: { readonly pos?: number | undefined }) => {
    if (pos === undefined) return true
    if (pos <= ingestPos || Math.floor(pos / INGEST_POSITIONS) <= read.resetSeq) return false
    ingestPos = pos
    return true
  }
  return { fresh, unseen }
}
