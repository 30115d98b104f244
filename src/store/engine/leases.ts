/**
 * The engine's partition leases: checked by each lane transaction (its work commits only while its worker holds
 * the lease at its epoch), and heartbeated, renewed, taken, released and expired by PartitionLeases.ts.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { pgArray } from "../../lib/pgArray.ts"

export interface LeaseHolder {
  readonly partition: number
  readonly workerId: string
  readonly epoch: number
}

/** The lease, share-locked (a takeover waits for this transaction): one row while `holder` holds it, none once lost. */
export const leaseHeldSql = (sql: SqlClient.SqlClient, holder: LeaseHolder) =>
  sql`
      SELECT 1 FROM partition_leases
      WHERE partition = ${holder.partition} AND owner = ${holder.workerId} AND epoch = ${holder.epoch}
      FOR SHARE`

/** The lease and state rows of partitions 0 to `partitions` - 1, created where missing. */
export const seedPartitions = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, partitions: number) {
  yield* sql`INSERT INTO partition_leases (partition)
             SELECT generate_series(0, ${partitions - 1}) ON CONFLICT DO NOTHING`
  yield* sql`INSERT INTO partition_state (partition)
             SELECT generate_series(0, ${partitions - 1}) ON CONFLICT DO NOTHING`
})

/** Where each partition's new owner starts reading (its consumers' watermarks), saved while `workerId` holds it at `epoch`. */
export const saveWatermarksSql = (
  sql: SqlClient.SqlClient,
  workerId: string,
  marks: ReadonlyArray<{ partition: number; epoch: number; lanes: number; ingest: number; legacy: number }>
) =>
  sql`
      UPDATE partition_state s SET lane_seq = GREATEST(s.lane_seq, x.lanes), ingest_seq = GREATEST(s.ingest_seq, x.ingest),
                                   applied_seq = GREATEST(s.applied_seq, x.legacy)
      FROM jsonb_to_recordset(${
    JSON.stringify(marks)
  }::jsonb) AS x(partition int, epoch bigint, lanes bigint, ingest bigint, legacy bigint),
           partition_leases l
      WHERE s.partition = x.partition AND l.partition = x.partition AND l.owner = ${workerId} AND l.epoch = x.epoch`

/**
 * Expires the released partitions' leases held by `workerId` (the next owner bumps the epoch) without
 * touching the lease rows: an update of such a row would queue behind batch transactions share-locking it.
 */
export const expireReleasedSql = (sql: SqlClient.SqlClient, workerId: string, released: ReadonlyArray<number>) =>
  sql`
        UPDATE partition_state s SET expires_at = '-infinity'
        FROM partition_leases l
        WHERE s.partition IN ${sql.in(released)} AND l.partition = s.partition AND l.owner = ${workerId}`

/**
 * One statement: this worker's heartbeat, workers dead for 3 × `deadSeconds` forgotten, and the live ones
 * counted (the count does not see the CTEs' writes: the others, plus this one).
 */
export const heartbeatSql = (sql: SqlClient.SqlClient, workerId: string, deadSeconds: number) =>
  sql<{ n: number }>`
      WITH beat AS (
        INSERT INTO workers (id, heartbeat_at) VALUES (${workerId}, now())
        ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
      ), forgotten AS (
        DELETE FROM workers WHERE heartbeat_at < now() - make_interval(secs => ${deadSeconds * 3}) AND id <> ${workerId}
      )
      SELECT count(*)::int + 1 AS n FROM workers
      WHERE heartbeat_at > now() - make_interval(secs => ${deadSeconds}) AND id <> ${workerId}`

/** Renews the leases still alive that `workerId` holds of the partitions running here (`owned`), for `ttlSeconds`. */
export const renewLeasesSql = (sql: SqlClient.SqlClient, workerId: string, ttlSeconds: number, owned: Iterable<number>) =>
  sql<{ partition: number; epoch: string }>`
      UPDATE partition_state s SET expires_at = now() + make_interval(secs => ${ttlSeconds})
      FROM partition_leases l
      WHERE l.partition = s.partition AND l.owner = ${workerId} AND s.expires_at > now()
        AND s.partition = ANY(${pgArray([...owned].map(String))}::int[])
      RETURNING s.partition, l.epoch`

/**
 * Leases up to `limit` free partitions (never leased, or expired) below `partitions` to `workerId` at the next
 * epoch, with their saved watermarks; one still share-locked by its old owner's in-flight batch is skipped.
 */
export const acquireLeasesSql = (sql: SqlClient.SqlClient, workerId: string, partitions: number, limit: number, ttlSeconds: number) =>
  sql<
    { partition: number; epoch: string; lane_seq: string; ingest_seq: string; applied_seq: string; legacy_drained: boolean }
  >`
        WITH free AS (
          SELECT l.partition FROM partition_leases l JOIN partition_state s ON s.partition = l.partition
          WHERE (l.owner IS NULL OR s.expires_at < now()) AND l.partition < ${partitions}
          ORDER BY l.partition
          LIMIT ${limit}
          FOR UPDATE OF l SKIP LOCKED
        ), taken AS (
          UPDATE partition_leases l SET owner = ${workerId}, epoch = l.epoch + 1
          FROM free WHERE l.partition = free.partition
          RETURNING l.partition, l.epoch
        ), renewed AS (
          UPDATE partition_state s SET expires_at = now() + make_interval(secs => ${ttlSeconds})
          FROM taken WHERE s.partition = taken.partition
          RETURNING s.partition, s.lane_seq, s.ingest_seq, s.applied_seq, s.legacy_drained
        )
        SELECT taken.partition, taken.epoch, renewed.lane_seq, renewed.ingest_seq, renewed.applied_seq, renewed.legacy_drained
        FROM taken JOIN renewed ON renewed.partition = taken.partition`

/** Expires every live lease `workerId` still holds (leased and never started, at shutdown). */
export const expireHeldSql = (sql: SqlClient.SqlClient, workerId: string) =>
  sql`
        UPDATE partition_state s SET expires_at = '-infinity'
        FROM partition_leases l
        WHERE l.partition = s.partition AND l.owner = ${workerId} AND s.expires_at > now()`

/** Forgets the worker (at shutdown). */
export const forgetWorkerSql = (sql: SqlClient.SqlClient, workerId: string) => sql`DELETE FROM workers WHERE id = ${workerId}`

/** Tells the other workers (on `channel`) that `workerId` released partitions or joined. */
export const notifyLeasesSql = (sql: SqlClient.SqlClient, channel: string, workerId: string) =>
  sql`SELECT pg_notify(${channel}, ${workerId})`

/** Where a partition's lane and ingest consumers start reading (the watermarks its last owner saved). */
export const partitionWatermarksSql = (sql: SqlClient.SqlClient, partition: number) =>
  sql<{ lane_seq: string; ingest_seq: string }>`
            SELECT lane_seq, ingest_seq FROM partition_state WHERE partition = ${partition}`

/** The partitions' saved watermarks: every message below them is applied (what the stream may purge). */
export const partitionsWatermarksSql = (sql: SqlClient.SqlClient, partitions: ReadonlyArray<number>) =>
  sql<{ partition: number; lane_seq: string; ingest_seq: string; applied_seq: string }>`
      SELECT partition, lane_seq, ingest_seq, applied_seq FROM partition_state
      WHERE partition = ANY(${pgArray(partitions.map(String))}::int[])`
