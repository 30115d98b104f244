/**
 * What the dashboard shows of a project's health: its bounce and complaint rates over the last 7 days,
 * its suspensions, and what a new project still lacks (setup state). Also automatic protection: a
 * project whose rates pass MAX_BOUNCE_RATE / MAX_COMPLAINT_RATE (over at least MIN_SENDS sends) is
 * disabled with a reason and a suspension record. Rates count only mail sent since the last time an
 * owner lifted a suspension, so re-enabling is not undone by the same old bounces.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { requiresVerifiedDomain } from "../domain/delivery.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

/**
 * For the sender's claim (a hook the engine adds): campaign and workflow mail (priority 1) of a disabled
 * project stays PENDING, held rather than dropped, and goes out once the project is enabled again.
 * A condition over the `emails` row being claimed.
 */
export const HELD_MARKETING_SQL =
  "(emails.priority = 0 OR NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = emails.project_id AND p.disabled))"

/** Below this many sends in the window, rates are too noisy to act on. */
export const MIN_SENDS = 100

export interface Rates {
  readonly windowStart: Date
  readonly sends: number
  readonly bounces: number
  readonly complaints: number
  /** Percentages (0..100). */
  readonly bounceRate: number
  readonly complaintRate: number
}

export interface Suspension {
  readonly id: string
  readonly reason: string
  readonly bounceRate: number
  readonly complaintRate: number
  readonly sends: number
  readonly createdAt: Date
  readonly liftedAt: Date | null
}

export interface SetupState {
  readonly hasVerifiedDomain: boolean
  readonly hasTemplate: boolean
  readonly hasContact: boolean
  readonly hasTrackedEvent: boolean
  readonly hasSentEmail: boolean
  readonly complete: boolean
}

export interface Thresholds {
  /** Percentages. */
  readonly maxBounceRate: number
  readonly maxComplaintRate: number
}

/** Why a project with these rates must be disabled, or undefined. Pure: the whole policy. */
export const protectionVerdict = (rates: Rates, thresholds: Thresholds): string | undefined => {
  if (rates.sends < MIN_SENDS) return undefined
  if (rates.bounceRate > thresholds.maxBounceRate) {
    return `Bounce rate ${rates.bounceRate.toFixed(2)}% over the last 7 days exceeds ${thresholds.maxBounceRate}%`
  }
  if (rates.complaintRate > thresholds.maxComplaintRate) {
    return `Complaint rate ${rates.complaintRate.toFixed(2)}% over the last 7 days exceeds ${thresholds.maxComplaintRate}%`
  }
  return undefined
}

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100)

export class ProjectHealth extends Context.Service<ProjectHealth, {
  readonly rates: (projectId: string) => Effect.Effect<Rates, PersistenceError>
  readonly suspensions: (projectId: string) => Effect.Effect<ReadonlyArray<Suspension>, PersistenceError>
  readonly setupState: (projectId: string) => Effect.Effect<SetupState, PersistenceError>
  /** Disables every enabled project over the thresholds; answers the ids it disabled. */
  readonly enforce: (thresholds: Thresholds) => Effect.Effect<ReadonlyArray<string>, PersistenceError>
  /** Re-enables a project, lifting its open suspensions (by `userId`). */
  readonly enable: (projectId: string, userId: string) => Effect.Effect<void, PersistenceError>
}>()("app/store/ProjectHealth") {
  static readonly layer = Layer.effect(
    ProjectHealth,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // Under local delivery (no SMTP_URL) a verified domain is not needed, so setup is complete without one.
      const domainRequired = requiresVerifiedDomain(yield* AppConfig)

      type RateRow = { project_id: string; window_start: Date; sends: number; bounces: number; complaints: number }
      /** Rates of the given projects (all enabled projects with recent mail when `projectId` is undefined). */
      const rateRows = (projectId: string | undefined) =>
        sql<RateRow>`
          WITH scope AS (
            SELECT p.id, GREATEST(now() - interval '7 days',
                                  COALESCE((SELECT max(lifted_at) FROM project_suspensions s WHERE s.project_id = p.id), '-infinity')) AS window_start
            FROM projects p
            WHERE ${projectId === undefined ? sql`NOT p.disabled` : sql`p.id = ${projectId}`}
          )
          SELECT scope.id AS project_id, scope.window_start,
                 count(e.sent_at)::int AS sends,
                 count(e.bounced_at)::int AS bounces,
                 count(e.complained_at)::int AS complaints
          FROM scope
          LEFT JOIN emails e ON e.project_id = scope.id AND e.created_at >= scope.window_start - interval '1 day'
                            AND e.sent_at >= scope.window_start
          GROUP BY scope.id, scope.window_start`

      const toRates = (row: RateRow): Rates => ({
        windowStart: row.window_start,
        sends: row.sends,
        bounces: row.bounces,
        complaints: row.complaints,
        bounceRate: percent(row.bounces, row.sends),
        complaintRate: percent(row.complaints, row.sends)
      })

      const rates = Effect.fn("ProjectHealth.rates")(function*(projectId: string) {
        const [row] = yield* rateRows(projectId)
        return toRates(
          row ?? { project_id: projectId, window_start: new Date(yield* Clock.currentTimeMillis), sends: 0, bounces: 0, complaints: 0 }
        )
      }, mapSqlError)

      const suspensions = Effect.fn("ProjectHealth.suspensions")(function*(projectId: string) {
        const rows = yield* sql<{
          id: string
          reason: string
          bounce_rate: number
          complaint_rate: number
          sends: number
          created_at: Date
          lifted_at: Date | null
        }>`SELECT id, reason, bounce_rate, complaint_rate, sends, created_at, lifted_at FROM project_suspensions
           WHERE project_id = ${projectId} ORDER BY created_at DESC LIMIT 50`
        return rows.map((row) => ({
          id: row.id,
          reason: row.reason,
          bounceRate: row.bounce_rate,
          complaintRate: row.complaint_rate,
          sends: row.sends,
          createdAt: row.created_at,
          liftedAt: row.lifted_at
        }))
      }, mapSqlError)

      const setupState = Effect.fn("ProjectHealth.setupState")(function*(projectId: string) {
        const [row] = yield* sql<Omit<SetupState, "complete"> & Record<string, boolean>>`
          SELECT EXISTS (SELECT 1 FROM domains WHERE project_id = ${projectId} AND status = 'VERIFIED') AS "hasVerifiedDomain",
                 EXISTS (SELECT 1 FROM templates WHERE project_id = ${projectId}) AS "hasTemplate",
                 EXISTS (SELECT 1 FROM contacts WHERE project_id = ${projectId}) AS "hasContact",
                 EXISTS (SELECT 1 FROM events WHERE project_id = ${projectId}) AS "hasTrackedEvent",
                 EXISTS (SELECT 1 FROM emails WHERE project_id = ${projectId} AND sent_at IS NOT NULL) AS "hasSentEmail"`
        const state = {
          hasVerifiedDomain: row!.hasVerifiedDomain,
          hasTemplate: row!.hasTemplate,
          hasContact: row!.hasContact,
          hasTrackedEvent: row!.hasTrackedEvent,
          hasSentEmail: row!.hasSentEmail
        }
        const { hasVerifiedDomain, ...rest } = state
        return { ...state, complete: (hasVerifiedDomain || !domainRequired) && Object.values(rest).every(Boolean) }
      }, mapSqlError)

      const enforce = Effect.fn("ProjectHealth.enforce")(function*(thresholds: Thresholds) {
        const rows = yield* rateRows(undefined)
        const disabled: Array<string> = []
        for (const row of rows) {
          const measured = toRates(row)
          const reason = protectionVerdict(measured, thresholds)
          if (!reason) continue
          const changed = yield* sql.withTransaction(Effect.gen(function*() {
            const updated =
              yield* sql`UPDATE projects SET disabled = true, disabled_reason = ${reason}, disabled_at = now(), updated_at = now()
                                       WHERE id = ${row.project_id} AND NOT disabled RETURNING id`
            if (updated.length === 0) return false
            yield* sql`INSERT INTO project_suspensions (id, project_id, reason, bounce_rate, complaint_rate, sends)
                       VALUES (${uuidv7()}, ${row.project_id}, ${reason}, ${measured.bounceRate}, ${measured.complaintRate}, ${measured.sends})`
            return true
          }))
          if (changed) disabled.push(row.project_id)
        }
        return disabled
      }, mapSqlError)

      const enable = Effect.fn("ProjectHealth.enable")(function*(projectId: string, userId: string) {
        yield* sql.withTransaction(Effect.all([
          sql`UPDATE projects SET disabled = false, disabled_reason = NULL, disabled_at = NULL, updated_at = now() WHERE id = ${projectId}`,
          sql`UPDATE project_suspensions SET lifted_at = now(), lifted_by = ${userId} WHERE project_id = ${projectId} AND lifted_at IS NULL`
        ]))
      }, mapSqlError)

      return ProjectHealth.of({ rates, suspensions, setupState, enforce, enable })
    })
  )
}
