/**
 * The webhook runner: performs the WEBHOOK steps that project actors recorded (step RUNNING), for the
 * partitions this worker leases, and reports each outcome back into the project's partition (outbox
 * `webhookDone`), where the actor advances or fails the execution.
 *
 * At most once per step execution: an attempt is marked in flight (and counted) in a committed
 * statement before the request is made, and its outcome is recorded only while it is still in flight.
 * Transient failures (no response, 408, 429, 5xx) are retried with backoff up to MAX_ATTEMPTS; a
 * refused address (SSRF), too many redirects, another 4xx or a template error fails the step at once. A worker taking over
 * a partition fails the attempts that were in flight there (their outcome is unknown, so they are not
 * repeated). Requests are signed per Standard Webhooks (webhook-id = the step execution's id, stable
 * across retries so receivers can deduplicate; webhook-timestamp; webhook-signature v1 HMAC-SHA256
 * with the project's secret).
 */
import { Clock, Context, Effect, Layer, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeStepDefinition } from "../domain/workflowSteps.ts"
import { isolateRow, storableReason, storableText } from "../lib/isolation.ts"
import { safeFetch, type SafeResponse } from "../lib/safeHttp.ts"
import { signWebhook } from "../lib/standardWebhooks.ts"
import { contactLinks } from "../mail/links.ts"
import { decodeRows, JsonObject, Timestamp } from "../store/columns.ts"
import { makeRenderer, templateVariables } from "../mail/render.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import type { WorkflowMessage } from "../stream/messages.ts"
import { WorkflowMetrics } from "./metrics.ts"
import { WorkflowRuntime } from "./Runtime.ts"

export const MAX_ATTEMPTS = 5
/** Backoff after the n-th failed attempt: 2 s, 4 s, 8 s, 16 s. */
export const webhookRetrySeconds = (attempt: number) => Math.min(300, 2 ** attempt)
const MAX_CONCURRENT = 32
const OUTPUT_BODY_CHARS = 2_000

const renderer = makeRenderer()

/**
 * The Standard Webhooks headers follow a redirect to another origin (a receiver that moved still gets
 * a message it can verify); they carry no secret, only a signature of this one message. The step's
 * own headers do not (src/lib/safeHttp.ts).
 */
/** A claimed step's execution, workflow, step config, contact and project secrets (a LEFT JOIN may leave the step or contact out). */
const stepRows = decodeRows(Schema.Struct({
  status: Schema.String,
  current_step_id: Schema.NullOr(Schema.String),
  context: JsonObject,
  started_at: Timestamp,
  workflow_id: Schema.String,
  workflow_name: Schema.String,
  config: Schema.NullOr(Schema.Unknown),
  contact_id: Schema.String,
  email: Schema.NullOr(Schema.String),
  subscribed: Schema.NullOr(Schema.Boolean),
  data: Schema.NullOr(JsonObject),
  secret: Schema.String,
  link_secret: Schema.String
}))

const SIGNATURE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"]

export { signWebhook }

interface Claimed {
  id: string
  execution_id: string
  step_id: string
  project_id: string
  attempts: number
  contact_id: string
}

type Verdict =
  | { readonly _tag: "done"; readonly output: unknown }
  | { readonly _tag: "retry"; readonly error: string }
  | { readonly _tag: "failed"; readonly error: string }

export const judge = (response: SafeResponse, attempts: number): Verdict => {
  const retryOrFail = (error: string): Verdict =>
    attempts >= MAX_ATTEMPTS ? { _tag: "failed", error: `${error} (after ${attempts} attempts)` } : { _tag: "retry", error }
  switch (response._tag) {
    case "Blocked":
      return { _tag: "failed", error: `refused: ${response.reason}` }
    case "Invalid":
      return { _tag: "failed", error: response.reason }
    case "Failed":
      return retryOrFail(response.reason)
    case "Response": {
      if (response.status >= 200 && response.status < 300) {
        // Kept as the step's output (jsonb): whatever the receiver answered must be storable.
        const body = storableText(response.body.slice(0, OUTPUT_BODY_CHARS))
        return { _tag: "done", output: { status: response.status, body, truncated: response.truncated } }
      }
      if (response.status === 408 || response.status === 429 || response.status >= 500) return retryOrFail(`HTTP ${response.status}`)
      return { _tag: "failed", error: `HTTP ${response.status}` }
    }
  }
}

export const makeWebhookRunner = (options: { readonly outbox: Outbox["Service"]; readonly wakeRelay: Effect.Effect<void> }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runtime = yield* WorkflowRuntime
    const inFlight = new Set<string>()

    /** The outcome goes to the execution's contact's lane, where the execution lives. */
    const report = (
      row: { execution_id: string; step_id: string; project_id: string; contact_id: string },
      ok: boolean,
      error?: string
    ) => {
      const message: WorkflowMessage = {
        kind: "workflow",
        projectId: row.project_id,
        type: "webhookDone",
        executionId: row.execution_id,
        stepId: row.step_id,
        contactId: row.contact_id,
        ok,
        ...(error === undefined ? {} : { error })
      }
      return options.outbox.append([message])
    }

    /** Records an attempt's verdict, only if the attempt is still ours (in flight). */
    const settle = (row: Claimed, verdict: Verdict) =>
      sql.withTransaction(Effect.gen(function*() {
        WorkflowMetrics.webhookAttempts.inc(1, { outcome: verdict._tag })
        if (verdict._tag === "retry") {
          yield* sql`UPDATE workflow_step_executions SET in_flight = false, error = ${storableReason(verdict.error)},
                       next_attempt_at = now() + make_interval(secs => ${webhookRetrySeconds(row.attempts)})
                     WHERE id = ${row.id} AND in_flight`
          return
        }
        const done = verdict._tag === "done"
        const updated = yield* sql`
          UPDATE workflow_step_executions SET in_flight = false, status = ${done ? "COMPLETED" : "FAILED"},
                 output = ${done ? JSON.stringify(verdict.output) : null}::jsonb, error = ${done ? null : storableReason(verdict.error)},
                 finished_at = now()
          WHERE id = ${row.id} AND in_flight AND status = 'RUNNING'
          RETURNING id`
        if (updated.length > 0) yield* report(row, done, done ? undefined : storableReason(verdict.error))
      }))

    const perform = Effect.fnUntraced(function*(row: Claimed) {
      const [found] = yield* stepRows(sql`
        SELECT e.status, e.current_step_id, e.context, e.started_at, w.id AS workflow_id, w.name AS workflow_name, s.config,
               e.contact_id, c.email, c.subscribed, c.data, p.webhook_secret AS secret, p.link_secret
        FROM workflow_executions e
        JOIN workflows w ON w.id = e.workflow_id
        JOIN projects p ON p.id = e.project_id
        LEFT JOIN workflow_steps s ON s.id = ${row.step_id}
        LEFT JOIN contacts c ON c.id = e.contact_id
        WHERE e.id = ${row.execution_id}`)
      if (!found || found.status !== "RUNNING" || found.current_step_id !== row.step_id) {
        // Cancelled (or gone) before its turn: nothing to perform.
        yield* sql`UPDATE workflow_step_executions SET in_flight = false, status = 'SKIPPED', error = 'execution no longer running',
                     finished_at = now() WHERE id = ${row.id} AND in_flight`
        return
      }
      if (found.config === null || found.email === null)
        return yield* settle(row, { _tag: "failed", error: "the step or the contact no longer exists" })
      const decoded = decodeStepDefinition("WEBHOOK", found.config)
      if (Result.isFailure(decoded) || decoded.success.type !== "WEBHOOK") {
        return yield* settle(row, {
          _tag: "failed",
          error: `the step's config is not valid: ${Result.isFailure(decoded) ? decoded.failure : "not a WEBHOOK"}`
        })
      }
      const config = decoded.success.config
      const context = found.context
      const data = found.data ?? {}
      const variables = templateVariables({
        contact: { id: found.contact_id, email: found.email, data },
        sendData: context,
        links: contactLinks(runtime.publicUrl, found.link_secret, found.contact_id),
        extra: {
          event: context,
          workflow: { id: found.workflow_id, name: found.workflow_name },
          execution: { id: row.execution_id, startedAt: found.started_at }
        }
      })
      const rendered = yield* Effect.tryPromise({
        try: async () => {
          const url = (await renderer.render(config.url, "text", variables)).trim()
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(config.headers ?? {})) {
            headers[name.toLowerCase()] = (await renderer.render(value, "text", variables)).replace(/[\r\n]/g, " ")
          }
          const method = config.method ?? "POST"
          let body: string | undefined
          if (config.body !== undefined && config.body !== null) {
            body = await renderer.render(typeof config.body === "string" ? config.body : JSON.stringify(config.body), "text", variables)
          } else if (method !== "GET" && method !== "DELETE") {
            body = JSON.stringify({
              contact: { id: found.contact_id, email: found.email, subscribed: found.subscribed, data },
              workflow: { id: found.workflow_id, name: found.workflow_name },
              execution: { id: row.execution_id, startedAt: found.started_at },
              event: context
            })
          }
          return { url, headers, method, body }
        },
        catch: (error) => (error instanceof Error ? error.message : String(error))
      }).pipe(Effect.map((value) => ({ value })), Effect.catch((error) => Effect.succeed({ error })))
      if ("error" in rendered) return yield* settle(row, { _tag: "failed", error: rendered.error })
      const { url, method, body } = rendered.value
      const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const headers: Record<string, string> = {
        "user-agent": "mailstream-webhooks/1",
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...rendered.value.headers,
        "webhook-id": row.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signWebhook(found.secret, row.id, timestamp, body ?? "")
      }
      const response = yield* Effect.promise(() =>
        safeFetch({ url, method, headers, body, allow: runtime.allowAddress, crossOriginHeaders: SIGNATURE_HEADERS }, runtime.resolve)
      )
      yield* settle(row, judge(response, row.attempts))
    })

    /** Claims what is due in `partitions` and performs it in the background. */
    const sweep = (partitions: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const room = MAX_CONCURRENT - inFlight.size
        if (partitions.length === 0 || room <= 0) return
        const claimed = yield* sql<Claimed>`
          UPDATE workflow_step_executions s SET in_flight = true, attempts = s.attempts + 1
          FROM workflow_executions e
          WHERE e.id = s.execution_id AND s.id IN (
            SELECT id FROM workflow_step_executions
            WHERE step_type = 'WEBHOOK' AND status = 'RUNNING' AND NOT in_flight AND next_attempt_at <= now()
              AND partition IN ${sql.in(partitions)}
            ORDER BY next_attempt_at LIMIT ${room}
            FOR UPDATE SKIP LOCKED)
          RETURNING s.id, s.execution_id, s.step_id, s.project_id, s.attempts, e.contact_id`
        for (const row of claimed) {
          inFlight.add(row.id)
          // A step that fails unexpectedly fails alone, with the reason: whether its request went out is
          // unknown, so it is never repeated. (The database being away leaves it in flight for recovery.)
          yield* isolateRow(
            "webhook runner",
            { stepExecutionId: row.id, projectId: row.project_id },
            perform(row),
            (reason) => settle(row, { _tag: "failed", error: `internal error: ${reason}` })
          ).pipe(
            Effect.ignore,
            Effect.andThen(options.wakeRelay),
            // A retry was scheduled (next_attempt_at): the sleeping webhook loop looks again for its due time.
            Effect.andThen(runtime.wakeWebhooks),
            Effect.ensuring(Effect.sync(() => inFlight.delete(row.id))),
            Effect.forkDetach
          )
        }
      })

    /**
     * On taking a partition over: attempts left in flight by the previous owner may or may not have
     * reached their receiver; they are failed, never repeated.
     */
    const recoverPartition = (partition: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const lost = yield* sql<{ id: string; execution_id: string; step_id: string; project_id: string; contact_id: string }>`
          UPDATE workflow_step_executions s SET in_flight = false, status = 'FAILED', finished_at = now(),
                 error = 'the worker performing the request stopped before its outcome was known; not repeated'
          FROM workflow_executions e
          WHERE e.id = s.execution_id AND s.partition = ${partition} AND s.step_type = 'WEBHOOK' AND s.status = 'RUNNING' AND s.in_flight
            ${inFlight.size > 0 ? sql`AND NOT (s.id IN ${sql.in([...inFlight])})` : sql``}
          RETURNING s.id, s.execution_id, s.step_id, s.project_id, e.contact_id`
        for (const row of lost) yield* report(row, false, "the worker performing the request stopped before its outcome was known")
        return lost.length
      })).pipe(Effect.tap((lost) => (lost > 0 ? options.wakeRelay : Effect.void)))

    return { sweep, recoverPartition }
  })

/** The worker's webhook runner, one per process: the webhook sweep and a partition's takeover share its attempts in flight. */
export class WebhookRunner extends Context.Service<WebhookRunner, Effect.Success<ReturnType<typeof makeWebhookRunner>>>()(
  "app/workflows/WebhookRunner"
) {
  static readonly layer = Layer.effect(
    WebhookRunner,
    Effect.gen(function*() {
      const relay = yield* OutboxRelay
      return yield* makeWebhookRunner({ outbox: yield* Outbox, wakeRelay: relay.wake })
    })
  )
}
