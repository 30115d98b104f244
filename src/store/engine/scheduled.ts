/**
 * When the worker's scheduled work is next due over the partitions it leases (`owned`: a Postgres int array
 * literal), per loop of ScheduledWork.ts: the earliest time of each table's due rows (null: nothing scheduled).
 */
import type { SqlClient } from "effect/sql"

export const nextSegmentTimerDue = (sql: SqlClient.SqlClient, owned: string) =>
  sql<{ due: Date | null }>`
          SELECT min(t.due) AS due FROM unnest(${owned}::int[]) AS p(partition),
            LATERAL (SELECT min(due_at) AS due FROM timers WHERE timers.partition = p.partition) t`

export const nextWorkflowTimerDue = (sql: SqlClient.SqlClient, owned: string) =>
  sql<{ due: Date | null }>`
          SELECT min(t.due) AS due FROM unnest(${owned}::int[]) AS p(partition),
            LATERAL (SELECT min(due_at) AS due FROM workflow_timers w WHERE w.partition = p.partition) t`

export const nextScheduledCampaignDue = (sql: SqlClient.SqlClient, owned: string) =>
  sql<{ due: Date | null }>`
          SELECT min(t.due) AS due FROM unnest(${owned}::int[]) AS p(partition),
            LATERAL (SELECT min(scheduled_for) AS due FROM campaigns c WHERE c.partition = p.partition AND c.status = 'SCHEDULED') t`

/** By Postgres' clock (`now`), as the mail sweep reads it. */
export const nextMailDue = (sql: SqlClient.SqlClient, owned: string) =>
  sql<{ due: Date | null; now: Date }>`
          SELECT min(next_attempt_at) AS due, now() AS now FROM emails
          WHERE partition = ANY(${owned}::int[]) AND status = 'PENDING'`

/** By Postgres' clock (`now`), as the webhook sweep reads it. */
export const nextWebhookDue = (sql: SqlClient.SqlClient, owned: string) =>
  sql<{ due: Date | null; now: Date }>`
          SELECT min(t.due) AS due, now() AS now FROM unnest(${owned}::int[]) AS p(partition),
            LATERAL (SELECT min(next_attempt_at) AS due FROM workflow_step_executions s
                     WHERE s.partition = p.partition AND s.step_type = 'WEBHOOK' AND s.status = 'RUNNING' AND NOT s.in_flight) t`
