/**
 * The engine's stream offsets: how far each lane (lane_offsets; before lanes, each project: project_offsets)
 * has applied its messages (the stream sequence) and its events (the ingest position). Moved in the same
 * transaction as what the messages write, only ever forward.
 */
import type { SqlClient, Statement } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"

/**
 * SQL for a lane batch's head: the offset as it was (`read`, row-locked: SELECT applied_seq, ingest_pos) and
 * moved past the batch (`write`: its highest sequence and ingest position). `lane` undefined: the project's.
 */
export const batchOffsetSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  lane: number | undefined,
  batchEnd: number,
  batchPos: number
): { readonly read: Statement.Fragment; readonly write: Statement.Fragment } =>
  lane === undefined
    ? {
      read: sql`SELECT applied_seq, 0 AS ingest_pos FROM project_offsets WHERE project_id = ${projectId} FOR UPDATE`,
      write: sql`
          INSERT INTO project_offsets (project_id, applied_seq) VALUES (${projectId}, ${batchEnd})
          ON CONFLICT (project_id) DO UPDATE SET applied_seq = GREATEST(project_offsets.applied_seq, EXCLUDED.applied_seq)`
    }
    : {
      read: sql`SELECT applied_seq, ingest_pos FROM lane_offsets WHERE project_id = ${projectId} AND lane = ${lane} FOR UPDATE`,
      write: sql`
          INSERT INTO lane_offsets (project_id, lane, applied_seq, ingest_pos) VALUES (${projectId}, ${lane}, ${batchEnd}, ${batchPos})
          ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq),
                                                       ingest_pos = GREATEST(lane_offsets.ingest_pos, EXCLUDED.ingest_pos)`
    }

/** SQL: the offset moved past one message `seq` (a dead letter's), the ingest position left as it is. */
export const recordOffsetSql = (sql: SqlClient.SqlClient, projectId: string, lane: number | undefined, seq: number) =>
  lane === undefined
    ? sql`
          INSERT INTO project_offsets (project_id, applied_seq) VALUES (${projectId}, ${seq})
          ON CONFLICT (project_id) DO UPDATE SET applied_seq = GREATEST(project_offsets.applied_seq, EXCLUDED.applied_seq)`
    : sql`
          INSERT INTO lane_offsets (project_id, lane, applied_seq) VALUES (${projectId}, ${lane}, ${seq})
          ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq)`

/** SQL: CTE `moved`, several lanes' offsets moved in a combined turn's write. */
export const movedOffsetsCte = (
  sql: SqlClient.SqlClient,
  projectId: string,
  moved: ReadonlyArray<{ readonly lane: number; readonly seq: number; readonly pos: number }>
): Statement.Fragment =>
  sql`moved AS (
      INSERT INTO lane_offsets (project_id, lane, applied_seq, ingest_pos)
      SELECT ${projectId}, x.lane, x.seq, x.pos
      FROM unnest(${pgArray(moved.map((entry) => String(entry.lane)))}::int[], ${
    pgArray(moved.map((entry) => String(entry.seq)))
  }::bigint[],
                  ${pgArray(moved.map((entry) => String(entry.pos)))}::bigint[]) AS x(lane, seq, pos)
      ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq),
                                                   ingest_pos = GREATEST(lane_offsets.ingest_pos, EXCLUDED.ingest_pos)
      RETURNING 1)`
