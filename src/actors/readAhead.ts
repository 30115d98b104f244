/**
 * Read-ahead: while a lane's batch of tracked events commits, its actor already starts the next batch's
 * transaction (BEGIN and its head statement) on a second connection, so those round trips overlap the
 * commit before it and what follows it (publishing its outbox rows, acks) instead of coming after them.
 *
 * Order still holds because:
 * - the next batch is started only once the batch before it has locked the lane's offset row (its head
 *   has returned), so the next head waits on that row lock until the batch before it commits or rolls
 *   back, and then reads the offset as that batch left it;
 * - the next batch goes no further than its head until the batch before it has ended, and gives up
 *   (rolls back, its messages applied again the ordinary way) unless that batch committed;
 * - a head's other reads (facts, stored event ids) see the database as it was before the batch before it
 *   committed, so the next batch may only hold tracked events of contacts the batch before it did not
 *   touch (by email and by id): the only rows that batch wrote are its own contacts' rows.
 * Anything else (contact changes, commands, timers, workflow messages) waits for the batch before it.
 */
import { Data, type Effect } from "effect"
import type { Delivered } from "./messages.ts"

/** A batch read ahead did not go on: the batch before it did not commit, or the offset did not move past it. */
export class ReadAheadAbandoned extends Data.TaggedError("ReadAheadAbandoned")<{
  readonly reason: "previous-failed" | "offset-behind"
}> {}

/** How a batch takes part in read-ahead (BatchContext.pipeline). */
export interface Pipeline {
  /** Signalled when the batch's statements are done and its COMMIT goes out: the next batch may be read ahead from then on. */
  readonly committing?: Effect.Effect<void> | undefined
  /** The batch was read ahead of another: goes on only once that one committed and moved the offset through `through`. */
  readonly after?: {
    readonly committed: Effect.Effect<boolean>
    readonly through: number
  } | undefined
}

/** The emails and contact ids of a batch of tracked events; undefined when the batch holds anything else. */
export const trackedContacts = (batch: ReadonlyArray<Delivered>) => {
  const emails = new Set<string>()
  const ids = new Set<string>()
  for (const message of batch) {
    if (message.body.kind !== "track") return undefined
    for (const event of message.body.events) {
      emails.add(event.email)
      ids.add(event.contactId)
    }
  }
  return { emails, ids }
}

/**
 * How many of the waiting messages (in order, at most `max`) may be read ahead of `current`: the longest
 * run of tracked events none of whose contacts `current` touches. 0 when `current` is not tracked events only.
 */
export const readAheadCount = (current: ReadonlyArray<Delivered>, waiting: ReadonlyArray<Delivered>, max: number) => {
  const touched = trackedContacts(current)
  if (!touched) return 0
  let count = 0
  for (const message of waiting) {
    if (count === max || message.body.kind !== "track") break
    if (message.body.events.some((event) => touched.emails.has(event.email) || touched.ids.has(event.contactId))) break
    count++
  }
  return count
}
