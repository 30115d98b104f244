/**
 * Campaigns and their state machine: DRAFT → SCHEDULED → SENDING → SENT, CANCELLED from SCHEDULED or
 * SENDING. Starting to send commits a `campaignStep` command to the project's partition of IN in the
 * same statement; the project's actor then freezes the audience and queues the mail (src/campaigns/fanout.ts).
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { Condition } from "../domain/conditions/types.ts"
import { conditionReads } from "../domain/conditions/validate.ts"
import { CampaignAudienceEmpty, CampaignNotSendable, InvalidCampaignState } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { isolateRow } from "../lib/isolation.ts"
import { OWNER_LANE } from "../stream/lanes.ts"
import { Outbox } from "../stream/Outbox.ts"
import { isoOrNull } from "./columns.ts"
import { campaignRecipients, type RecipientsPage } from "./campaignRecipients.ts"
import {
  CAMPAIGN_COLUMNS,
  type Campaign,
  type CampaignInput,
  type CampaignRow,
  type CampaignStats,
  type CampaignStatus,
  decodeCampaignRows,
  toCampaign
} from "./campaignRows.ts"
import { audienceOf, dropQueuedMail, hasRecipients } from "./campaignSending.ts"
import { pagedList, type SortedPage } from "./pagedList.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

const share = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000)

export interface ListQuery extends SortedPage {
  readonly status: CampaignStatus | undefined
}

export class Campaigns extends Context.Service<Campaigns, {
  readonly create: (projectId: string, input: CampaignInput) => Effect.Effect<Campaign, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Campaign | undefined, PersistenceError>
  readonly list: (
    projectId: string,
    query: ListQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Campaign>; readonly total: number }, PersistenceError>
  /** Replaces the content and audience; only while DRAFT or SCHEDULED (InvalidCampaignState otherwise). Undefined: no such campaign. */
  readonly replace: (
    projectId: string,
    id: string,
    input: CampaignInput
  ) => Effect.Effect<Campaign | undefined, InvalidCampaignState | PersistenceError>
  /** Deletes a DRAFT only (InvalidCampaignState otherwise), as the reference does: what was sent keeps its record. */
  readonly remove: (projectId: string, id: string) => Effect.Effect<true | undefined, InvalidCampaignState | PersistenceError>
  /**
   * From DRAFT or SCHEDULED (CampaignNotSendable otherwise), when some contact would get it
   * (CampaignAudienceEmpty otherwise): SCHEDULED at `at`, or SENDING now (with the first fan-out command).
   */
  readonly send: (
    projectId: string,
    id: string,
    at: Date | undefined
  ) => Effect.Effect<Campaign | undefined, CampaignNotSendable | CampaignAudienceEmpty | PersistenceError>
  /**
   * From SCHEDULED: back to an editable DRAFT, unscheduled (nothing was sent). From SENDING: CANCELLED,
   * its mail not yet handed to SMTP not sent. InvalidCampaignState otherwise.
   */
  readonly cancel: (projectId: string, id: string) => Effect.Effect<Campaign | undefined, InvalidCampaignState | PersistenceError>
  readonly stats: (projectId: string, id: string) => Effect.Effect<CampaignStats | undefined, PersistenceError>
  /** Who it goes to (or would, sent now), a page at a time; undefined when the campaign does not exist. */
  readonly recipients: (
    projectId: string,
    id: string,
    page: number,
    pageSize: number
  ) => Effect.Effect<RecipientsPage | undefined, PersistenceError>
  /**
   * Scheduled campaigns of these partitions due at `now`: moved to SENDING, their fan-out started. A
   * round of the worker's loop, which retries a failed round: its SqlError is left as the loop's other rounds have it.
   */
  readonly startDue: (partitions: ReadonlyArray<number>, now: Date) => Effect.Effect<number, SqlError.SqlError>
  /** Campaigns that use the segment and are SCHEDULED or SENDING. */
  readonly activeUsingSegment: (
    projectId: string,
    segmentId: string
  ) => Effect.Effect<ReadonlyArray<{ id: string; name: string }>, PersistenceError>
  readonly all: (projectId: string) => Effect.Effect<ReadonlyArray<Campaign>, PersistenceError>
  /**
   * The project's campaign test sends of the last hour, for their hourly limit: locked for the caller's
   * transaction (two requests cannot both take the last one), counted up to `limit`, with the seconds
   * until the oldest of those counted leaves the hour.
   */
  readonly recentTestSends: (
    projectId: string,
    limit: number
  ) => Effect.Effect<{ readonly count: number; readonly freeInSeconds: number }, PersistenceError>
  /**
   * Counts an unsubscribe for the campaign of `emailId`: call it in the transaction that unsubscribes
   * the contact, before that write. It counts only when the contact is subscribed (its row locked until
   * commit, so a repeated one-click counts once), the email is this contact's in this project, and the
   * email neither bounced nor drew a complaint (those suppress the contact and are counted as such).
   */
  readonly countUnsubscribe: (projectId: string, contactId: string, emailId: string) => Effect.Effect<void, PersistenceError>
}>()("app/store/Campaigns") {
  static readonly layer = Layer.effect(
    Campaigns,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock
      const outbox = yield* Outbox

      /** The command that makes the project's owner lane take the campaign's next fan-out step. */
      const stepCommand = (projectId: string, campaignId: string) =>
        outbox.rowsOf([{ kind: "command", projectId, commandId: uuidv7(), type: "campaignStep", campaignId }])[0]!

      const create = Effect.fn("Campaigns.create")(function*(projectId: string, input: CampaignInput) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const [row] = yield* sql`
          INSERT INTO campaigns (id, project_id, partition, name, description, subject, body, from_email, from_name, reply_to,
                                 type, audience_type, segment_id, audience_condition, created_at, updated_at)
          VALUES (${uuidv7()}, ${projectId}, ${outbox.lanes.partitionOf(projectId, OWNER_LANE)}, ${input.name}, ${input.description},
                  ${input.subject}, ${input.body}, ${input.from}, ${input.fromName}, ${input.replyTo}, ${input.type},
                  ${input.audienceType}, ${input.segmentId}, ${
          input.audienceCondition === null ? null : JSON.stringify(input.audienceCondition)
        }::jsonb,
                  ${now}, ${now})
          RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}`.pipe(Effect.flatMap(decodeCampaignRows))
        return toCampaign(row!)
      }, mapSqlError)

      const getRow = (projectId: string, id: string) =>
        Effect.map(
          sql`SELECT ${sql.literal(CAMPAIGN_COLUMNS)} FROM campaigns WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.flatMap(decodeCampaignRows)
          ),
          (rows) => rows[0]
        )

      const get = Effect.fn("Campaigns.get")(function*(projectId: string, id: string) {
        const row = yield* getRow(projectId, id)
        return row ? toCampaign(row) : undefined
      }, mapSqlError)

      const all = Effect.fn("Campaigns.all")(function*(projectId: string) {
        return (yield* sql`SELECT ${sql.literal(CAMPAIGN_COLUMNS)} FROM campaigns WHERE project_id = ${projectId}`.pipe(
          Effect.flatMap(decodeCampaignRows)
        )).map(toCampaign)
      }, mapSqlError)

      const list = Effect.fn("Campaigns.list")(function*(projectId: string, query: ListQuery) {
        const { rows, total } = yield* pagedList(sql, {
          table: "campaigns",
          columns: CAMPAIGN_COLUMNS,
          projectId,
          filters: query.status ? [sql`status = ${query.status}`] : [],
          searchColumns: ["name", "subject", "from_email"],
          query
        })
        return { data: (yield* decodeCampaignRows(rows)).map(toCampaign), total }
      }, mapSqlError)

      /** Locks the campaign and applies `change` when its status allows it (`refused` otherwise); undefined: no such campaign. */
      const transition = <A, E, E2 = never>(
        projectId: string,
        id: string,
        allowed: ReadonlyArray<CampaignStatus>,
        refused: (status: CampaignStatus) => E,
        change: (row: CampaignRow) => Effect.Effect<A, E2 | SqlError.SqlError | Schema.SchemaError>
      ) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql`
            SELECT ${sql.literal(CAMPAIGN_COLUMNS)} FROM campaigns WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE`.pipe(
            Effect.flatMap(decodeCampaignRows)
          )
          if (!row) return undefined
          if (!allowed.includes(row.status)) return yield* Effect.fail(refused(row.status))
          return yield* change(row)
        })).pipe(mapSqlError)

      const replace = (projectId: string, id: string, input: CampaignInput) =>
        transition(projectId, id, ["DRAFT", "SCHEDULED"], (status) => InvalidCampaignState.of(status, "edited"), () =>
          Effect.map(
            sql`
            UPDATE campaigns SET name = ${input.name}, description = ${input.description}, subject = ${input.subject},
                   body = ${input.body}, from_email = ${input.from}, from_name = ${input.fromName}, reply_to = ${input.replyTo},
                   type = ${input.type}, audience_type = ${input.audienceType}, segment_id = ${input.segmentId},
                   audience_condition = ${input.audienceCondition === null ? null : JSON.stringify(input.audienceCondition)}::jsonb,
                   updated_at = now()
            WHERE id = ${id} RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}`.pipe(Effect.flatMap(decodeCampaignRows)),
            (rows) => toCampaign(rows[0]!)
          ))

      const remove = (projectId: string, id: string) =>
        transition(
          projectId,
          id,
          ["DRAFT"],
          (status) =>
            InvalidCampaignState.of(
              status,
              status === "SCHEDULED" || status === "SENDING" ? "deleted: cancel it first" : "deleted: only drafts can"
            ),
          () => Effect.as(sql`DELETE FROM campaigns WHERE id = ${id}`, true as const)
        )

      const startSending = (row: Pick<CampaignRow, "id" | "project_id">) =>
        Effect.gen(function*() {
          const command = stepCommand(row.project_id, row.id)
          const [updated] = yield* sql`
            WITH up AS (
              UPDATE campaigns SET status = 'SENDING', scheduled_for = NULL, sending_started_at = now(), updated_at = now()
              WHERE id = ${row.id} RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}
            ), command AS (
              INSERT INTO outbox (id, subject, payload) VALUES (${command.id}, ${command.subject}, ${command.payload}::jsonb)
            )
            SELECT ${sql.literal(CAMPAIGN_COLUMNS)} FROM up`.pipe(Effect.flatMap(decodeCampaignRows))
          return toCampaign(updated!)
        })

      const send = (projectId: string, id: string, at: Date | undefined) =>
        transition(projectId, id, ["DRAFT", "SCHEDULED"], CampaignNotSendable.of, (row) =>
          Effect.gen(function*() {
            // As the reference refuses it: a campaign nobody would get is not sent (nor scheduled).
            if (!(yield* hasRecipients(sql, row).pipe(Effect.provideService(Clock.Clock, clock)))) return yield* CampaignAudienceEmpty.of()
            return at && at.getTime() > clock.currentTimeMillisUnsafe()
              ? toCampaign(
                (yield* sql`
                  UPDATE campaigns SET status = 'SCHEDULED', scheduled_for = ${at.toISOString()}, updated_at = now()
                  WHERE id = ${id} RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}`.pipe(Effect.flatMap(decodeCampaignRows)))[0]!
              )
              : yield* startSending(row)
          }))

      const cancel = (projectId: string, id: string) =>
        transition(
          projectId,
          id,
          ["SCHEDULED", "SENDING"],
          (status) => InvalidCampaignState.of(status, "cancelled"),
          (row) =>
            Effect.gen(function*() {
              if (row.status === "SCHEDULED") {
                // Nothing was sent: an editable draft again, as the reference returns it. The due loop reads
                // SCHEDULED rows only, so it will not start it.
                const [draft] = yield* sql`
                UPDATE campaigns SET status = 'DRAFT', scheduled_for = NULL, updated_at = now()
                WHERE id = ${id} RETURNING ${sql.literal(CAMPAIGN_COLUMNS)}`.pipe(Effect.flatMap(decodeCampaignRows))
                return toCampaign(draft!)
              }
              // The fan-out step locks the campaign too, so no mail is queued after this commits.
              const [updated] = yield* dropQueuedMail(sql, id, "the campaign was cancelled", null)
              return toCampaign(updated!)
            })
        )

      const recipients = Effect.fn("Campaigns.recipients")(function*(projectId: string, id: string, page: number, pageSize: number) {
        const row = yield* getRow(projectId, id)
        return row ? yield* campaignRecipients(sql, row, audienceOf(sql, row), page, pageSize) : undefined
      }, mapSqlError)

      const stats = Effect.fn("Campaigns.stats")(function*(projectId: string, id: string) {
        const row = yield* getRow(projectId, id)
        if (!row) return undefined
        const [open] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM emails WHERE campaign_id = ${id} AND status IN ('PENDING', 'SENDING')`
        const [deleted] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM campaign_recipients WHERE campaign_id = ${id} AND skipped = 'deleted'`
        const sent = row.sent_count
        return {
          id: row.id,
          status: row.status,
          resolved: row.resolved,
          queued: row.queued,
          totalRecipients: row.total_recipients,
          sent,
          delivered: row.delivered_count,
          opened: row.opened_count,
          clicked: row.clicked_count,
          bounced: row.bounced_count,
          complained: row.complained_count,
          unsubscribedCount: row.unsubscribed_count,
          failed: row.failed_count,
          pending: open?.n ?? 0,
          skipped: { unsubscribed: row.skipped_unsubscribed, suppressed: row.skipped_suppressed, deleted: deleted?.n ?? 0 },
          rates: {
            delivery: share(row.delivered_count, sent),
            open: share(row.opened_count, sent),
            click: share(row.clicked_count, sent),
            bounce: share(row.bounced_count, sent),
            unsubscribe: share(row.unsubscribed_count, sent)
          },
          sendingStartedAt: isoOrNull(row.sending_started_at),
          resolvedAt: isoOrNull(row.resolved_at),
          sentAt: isoOrNull(row.sent_at),
          error: row.error
        }
      }, mapSqlError)

      const startDue = Effect.fn("Campaigns.startDue")(function*(partitions: ReadonlyArray<number>, now: Date) {
        if (partitions.length === 0) return 0
        return yield* sql.withTransaction(Effect.gen(function*() {
          const due = yield* sql<Pick<CampaignRow, "id" | "project_id">>`
            SELECT id, project_id FROM campaigns
            WHERE partition IN ${sql.in(partitions)} AND status = 'SCHEDULED' AND scheduled_for <= ${now.toISOString()}::timestamptz
            ORDER BY scheduled_for LIMIT 100
            FOR UPDATE SKIP LOCKED`
          // Each in a savepoint: a campaign that cannot start is CANCELLED with the reason, the others start.
          for (const row of due) {
            yield* isolateRow(
              "scheduled campaigns",
              { projectId: row.project_id, campaignId: row.id },
              // A row that does not decode is this campaign's fault: set aside (CANCELLED) like a defect.
              sql.withTransaction(startSending(row)).pipe(Effect.catchTag("SchemaError", Effect.die)),
              (reason) => dropQueuedMail(sql, row.id, `the campaign could not be started: ${reason}`)
            )
          }
          return due.length
        }))
      })

      const activeUsingSegment = Effect.fn("Campaigns.activeUsingSegment")(function*(projectId: string, segmentId: string) {
        const active = yield* sql<{ id: string; name: string; segment_id: string | null; audience_condition: Condition | null }>`
          SELECT id, name, segment_id, audience_condition FROM campaigns
          WHERE project_id = ${projectId} AND status IN ('SCHEDULED', 'SENDING')`
        return active
          .filter((row) =>
            row.segment_id === segmentId ||
            (row.audience_condition !== null && conditionReads(row.audience_condition).segments.has(segmentId))
          )
          .map(({ id, name }) => ({ id, name }))
      }, mapSqlError)

      const recentTestSends = Effect.fn("Campaigns.recentTestSends")(function*(projectId: string, limit: number) {
        yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`test-sends:${projectId}`}))`
        // Test sends are the mail that names its billing category (emails_test_sends covers the scan).
        const [row] = yield* sql<{ count: number; free_in: number | null }>`
          SELECT count(*)::int AS count, ceil(extract(epoch FROM min(created_at) + interval '1 hour' - now()))::int AS free_in
          FROM (SELECT created_at FROM emails
                WHERE project_id = ${projectId} AND billing_category IS NOT NULL AND created_at > now() - interval '1 hour'
                ORDER BY created_at DESC LIMIT ${limit}) recent`
        return { count: row?.count ?? 0, freeInSeconds: Math.max(1, row?.free_in ?? 1) }
      }, mapSqlError)

      const countUnsubscribe = Effect.fn("Campaigns.countUnsubscribe")(function*(projectId: string, contactId: string, emailId: string) {
        yield* sql`
          WITH subscribed AS (
            SELECT id FROM contacts WHERE project_id = ${projectId} AND id = ${contactId} AND subscribed FOR UPDATE
          )
          UPDATE campaigns c SET unsubscribed_count = c.unsubscribed_count + 1
          FROM emails e, subscribed
          WHERE e.id = ${emailId} AND e.project_id = ${projectId} AND e.contact_id = subscribed.id
            AND c.id = e.campaign_id AND e.bounced_at IS NULL AND e.complained_at IS NULL`
      }, mapSqlError)

      return Campaigns.of({
        create,
        get,
        list,
        replace,
        remove,
        send,
        cancel,
        stats,
        recipients,
        startDue,
        activeUsingSegment,
        all,
        recentTestSends,
        countUnsubscribe
      })
    })
  )
}
