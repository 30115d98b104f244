/**
 * What a segment is: the `segments` row as the repository selects it (its schema and columns) and the
 * API's view of it. Apart from the repository because the actor's definitions cache reads these rows too.
 */
import { Schema } from "effect"
import type { Condition } from "../domain/conditions/types.ts"
import { StoredCondition, Timestamp } from "./columns.ts"

const SEGMENT_TYPES = ["DYNAMIC", "STATIC"] as const
export type SegmentType = (typeof SEGMENT_TYPES)[number]

export interface Segment {
  readonly id: string
  readonly name: string
  readonly description: string | null
  readonly type: SegmentType
  readonly condition: Condition | null
  readonly trackMembership: boolean
  readonly memberCount: number
  readonly projectId: string
  readonly version: number
  readonly createdAt: string
  readonly updatedAt: string
}

/** A `segments` row as SEGMENT_COLUMNS select it. */
export const SegmentRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  type: Schema.Literals(SEGMENT_TYPES),
  condition: Schema.NullOr(StoredCondition),
  track_membership: Schema.Boolean,
  member_count: Schema.Number,
  version: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type SegmentRow = typeof SegmentRow.Type

/** memberCount: the api's own changes (member_count) plus each lane's share (segment_counts, written by the lanes' actors). */
export const SEGMENT_COLUMNS = "id, project_id, name, description, type, condition, track_membership, " +
  "GREATEST(0, member_count + COALESCE((SELECT sum(sc.members) FROM segment_counts sc WHERE sc.segment_id = segments.id), 0))::int AS member_count, " +
  "version, created_at, updated_at"

export const segmentOf = (row: SegmentRow): Segment => ({
  id: row.id,
  name: row.name,
  description: row.description,
  type: row.type,
  condition: row.condition,
  trackMembership: row.track_membership,
  memberCount: row.member_count,
  projectId: row.project_id,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const decodeSegmentRow = Schema.decodeSync(SegmentRow)

/**
 * A row as the driver answered it (a query of its own, like the actor's definitions cache), decoded
 * here: it throws on a row that does not fit, as a defect (the repository's own queries decode as
 * effects and fail with PersistenceError instead).
 */
export const toSegment = (row: typeof SegmentRow.Encoded): Segment => segmentOf(decodeSegmentRow(row))
