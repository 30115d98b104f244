/**
 * The engine's partition leases: checked by each lane transaction (its work commits only while its worker holds
 * the lease at its epoch).
 */
import type { SqlClient } from "effect/sql"

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
