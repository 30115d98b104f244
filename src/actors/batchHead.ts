/**
 * The head statement a batch transaction starts with, in one round trip: the caller's own CTEs (lease,
 * offsets, reset watermark: share- or row-locked), the batch's contacts locked by email (in id order, as
 * every locker does), then rows of FactRow's shape: the head (h: the caller's `held` boolean and `data`
 * object), the locked contacts (c), the batch's events already stored (e), and the facts its segments
 * read about those contacts (a, t, m; none unless `facts` is given).
 */
import type { SqlClient, Statement } from "effect/sql"
import { pgArray } from "../lib/pgArray.ts"
import { INGEST_POSITIONS } from "../stream/messages.ts"
import { epochMs, type FactRow, factRowsSql } from "./segmentFacts.ts"
import { type FactNames } from "./segmentDefs.ts"

export type HeadRow = Omit<FactRow, "kind"> & {
  readonly kind: FactRow["kind"] | "h" | "e"
  readonly pins: Record<string, number> | string | null
}

export const batchHeadSql = (
  sql: SqlClient.SqlClient,
  input: {
    readonly projectId: string
    /** CTEs before `locked`, each `name AS (...)`, joined with commas. */
    readonly ctes: Statement.Fragment
    /** The h row's `subscribed` column (a boolean expression over the CTEs). */
    readonly held: Statement.Fragment
    /** The h row's `data` column (a jsonb expression over the CTEs). */
    readonly data: Statement.Fragment
    readonly emails: ReadonlyArray<string>
    readonly eventIds: ReadonlyArray<string>
    readonly facts:
      | (Pick<FactNames, "eventNames" | "windowed"> & {
        readonly since: number | undefined
        /** Contacts whose facts the caller has already (laneFacts.ts): not read. */
        readonly known?: ReadonlyArray<string> | undefined
      })
      | undefined
  }
) =>
  sql<HeadRow>`
    WITH ${input.ctes},
    locked AS (
      SELECT id, email, subscribed, pinned_at, data, created_at, updated_at FROM contacts
      WHERE project_id = ${input.projectId} AND email = ANY(${pgArray(input.emails)}::text[])
      ORDER BY id
      FOR UPDATE
    )
    SELECT 'h' AS kind, NULL::uuid AS contact_id, NULL::text AS name, NULL::bigint AS count, NULL::float8 AS t1,
           NULL::float8 AS t2, ${input.held} AS subscribed,
           -- No NOTIFY for the batch's outbox rows (migration 0015): its actor wakes the relay itself.
           ${input.data} || jsonb_build_object('quiet', set_config('mailstream.quiet_outbox', 'on', true)) AS data,
           NULL::jsonb AS pins
    UNION ALL
    SELECT 'c', id, email, NULL, ${epochMs(sql, "created_at")}, ${epochMs(sql, "updated_at")}, subscribed, data, pinned_at FROM locked
    UNION ALL
    SELECT 'e', id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM events WHERE id = ANY(${pgArray(input.eventIds)}::uuid[])
    UNION ALL
    ${
    factRowsSql(
      sql,
      input.projectId,
      input.facts?.known?.length
        ? sql`(SELECT id FROM locked WHERE id <> ALL(${pgArray(input.facts.known)}::uuid[]))`
        : sql`(SELECT id FROM locked)`,
      input.facts !== undefined,
      input.facts?.eventNames ?? new Set(),
      input.facts?.windowed ?? new Set(),
      input.facts?.since
    )
  }`
    // Planned for its own parameters every time: a cached generic plan cannot see how few contacts the
    // batch has. It once read the facts by hashing whole tables (103 ms a batch while contacts entered
    // their segments); with the facts read per contact it still took the track bench's cold window from
    // ~6,500 to ~450 events/s (tried in be0df0d, reverted).
    .unprepared

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
