/**
 * The executions repository against a real, migrated Postgres of its own (no service processes):
 * starts at most once, claims a step's key once, cancels within its scope (timers gone, the open step
 * skipped, a webhook in flight left to its runner), locks only the project's executions, and writes a
 * batch back set-wise.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { WorkflowExecutions } from "../../src/store/WorkflowExecutions.ts"
import { TestDatabase } from "../support/database.ts"

const NOW = "2026-03-01T12:00:00.000Z"

/** A project with a contact and a workflow of TRIGGER → DELAY; returns their ids. */
const fixture = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const project = uuidv7()
  const contact = uuidv7()
  const workflow = uuidv7()
  const trigger = uuidv7()
  const delay = uuidv7()
  yield* sql`INSERT INTO projects (id, name, public_key_hash, secret_key_hash)
             VALUES (${project}, 'p', ${Buffer.from(uuidv7())}, ${Buffer.from(uuidv7())})`
  yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
             VALUES (${contact}, ${project}, ${`${contact}@example.org`}, true, now(), now())`
  yield* sql`INSERT INTO workflows (id, project_id, name, trigger_config, enabled, allow_reentry, created_at, updated_at)
             VALUES (${workflow}, ${project}, 'w', '{"eventName":"signup"}', true, false, now(), now())`
  yield* sql`INSERT INTO workflow_steps (id, workflow_id, type, name, config, created_at) VALUES
             (${trigger}, ${workflow}, 'TRIGGER', 'TRIGGER', '{}', now()),
             (${delay}, ${workflow}, 'DELAY', 'DELAY', '{"amount":1,"unit":"days"}', now())`
  return { project, contact, workflow, trigger, delay }
})

type Fixture = Effect.Success<typeof fixture>

const start = (f: Fixture, sourceEventId = uuidv7(), allowReentry = false) =>
  Effect.gen(function*() {
    const executions = yield* WorkflowExecutions
    return yield* executions.start({
      projectId: f.project,
      workflowId: f.workflow,
      allowReentry,
      partition: 3,
      contactId: f.contact,
      triggerStepId: f.trigger,
      context: { plan: "pro" },
      sourceEventId,
      at: NOW
    })
  })

describe("WorkflowExecutions", () => {
  layer(WorkflowExecutions.layer.pipe(Layer.provideMerge(TestDatabase)), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("starts an execution once per source event, never beside an active one, never again without reentry", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const f = yield* fixture
        const event = uuidv7()
        const first = yield* start(f, event)
        assert(first !== undefined)
        expect(first).toMatchObject({
          workflowId: f.workflow,
          contactId: f.contact,
          status: "RUNNING",
          currentStepId: f.trigger,
          context: { plan: "pro" }
        })
        // The same event again, or another while one is active: nothing.
        expect(yield* start(f, event)).toBeUndefined()
        expect(yield* start(f)).toBeUndefined()
        // Once it ended, only a workflow with reentry starts again.
        yield* sql`UPDATE workflow_executions SET status = 'COMPLETED' WHERE id = ${first.id}`
        expect(yield* start(f)).toBeUndefined()
        expect(yield* start(f, uuidv7(), true)).toBeDefined()
        // A contact that is gone gets none.
        yield* sql`DELETE FROM contacts WHERE id = ${f.contact}`
        yield* sql`UPDATE workflow_executions SET status = 'COMPLETED' WHERE workflow_id = ${f.workflow}`
        expect(yield* start(f, uuidv7(), true)).toBeUndefined()
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_id = ${f.workflow}`
        expect(count!.n).toBe(2)
      }))

    it.effect("locks only the project's executions, and those waiting for the events named", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const executions = yield* WorkflowExecutions
        const f = yield* fixture
        const other = yield* fixture
        const mine = (yield* start(f))!
        const theirs = (yield* start(other))!
        const locked = yield* executions.lock(f.project, [mine.id, theirs.id])
        expect(locked.map((exec) => exec.id)).toEqual([mine.id])
        yield* sql`UPDATE workflow_executions SET status = 'WAITING', wait_event = 'paid' WHERE id IN (${mine.id}, ${theirs.id})`
        expect((yield* executions.lockWaiting(f.project, ["paid"], [f.contact, other.contact])).map((exec) => exec.id)).toEqual([mine.id])
        expect(yield* executions.lockWaiting(f.project, ["refunded"], [f.contact])).toEqual([])
      }))

    it.effect("claims a step's key once; a step waiting at the billing cap is claimed by its retry", () =>
      Effect.gen(function*() {
        const executions = yield* WorkflowExecutions
        const sql = yield* SqlClient.SqlClient
        const f = yield* fixture
        const exec = (yield* start(f))!
        const claim = (status: "COMPLETED" | "RUNNING") =>
          executions.claimStep({
            projectId: f.project,
            executionId: exec.id,
            stepId: f.delay,
            stepType: "DELAY",
            status,
            output: { n: 1 },
            at: NOW
          })
        expect(yield* claim("COMPLETED")).toBe(true)
        expect(yield* claim("COMPLETED")).toBe(false)
        yield* sql`UPDATE workflow_step_executions SET status = 'WAITING' WHERE execution_id = ${exec.id}`
        expect(yield* claim("RUNNING")).toBe(true)
        const [row] = yield* sql<{ status: string; partition: number; next_attempt_at: Date | null }>`
          SELECT status, partition, next_attempt_at FROM workflow_step_executions WHERE execution_id = ${exec.id}`
        expect(row).toMatchObject({ status: "RUNNING", partition: 3 })
        expect(row!.next_attempt_at).not.toBeNull()
      }))

    it.effect("cancels within its scope: timers go, the open step is skipped, a webhook in flight is left to its runner", () =>
      Effect.gen(function*() {
        const executions = yield* WorkflowExecutions
        const sql = yield* SqlClient.SqlClient
        const f = yield* fixture
        const a = (yield* start(f))!
        const b = (yield* start(yield* fixture))!
        yield* sql`INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
                   VALUES (${a.id}, ${uuidv7()}, ${f.project}, 3, ${f.delay}, now())`
        yield* sql`INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, in_flight, started_at) VALUES
                   (${uuidv7()}, ${a.id}, ${f.delay}, 'DELAY', ${f.project}, 3, 'WAITING', false, now()),
                   (${uuidv7()}, ${a.id}, ${uuidv7()}, 'WEBHOOK', ${f.project}, 3, 'RUNNING', true, now())`
        // Excepted: nothing happens to it.
        expect(yield* executions.cancel({ projectId: f.project, contactId: f.contact, except: [a.id], error: "gone", stepError: "gone" }))
          .toEqual([])
        const cancelled = yield* executions.cancel({
          projectId: f.project,
          contactId: f.contact,
          error: "the contact was deleted",
          stepError: "the contact was deleted"
        })
        expect(cancelled.map((row) => [row.id, row.status, row.error])).toEqual([[a.id, "CANCELLED", "the contact was deleted"]])
        expect(yield* sql`SELECT 1 FROM workflow_timers WHERE execution_id = ${a.id}`).toEqual([])
        const steps = yield* sql<{ step_type: string; status: string; error: string | null }>`
          SELECT step_type, status, error FROM workflow_step_executions WHERE execution_id = ${a.id} ORDER BY step_type`
        expect(steps).toEqual([
          { step_type: "DELAY", status: "SKIPPED", error: "the contact was deleted" },
          { step_type: "WEBHOOK", status: "RUNNING", error: null }
        ])
        // The other project's execution is untouched; cancelling it through its workflow keeps its error as it was.
        const [untouched] = yield* sql<{ status: string }>`SELECT status FROM workflow_executions WHERE id = ${b.id}`
        expect(untouched!.status).toBe("RUNNING")
        const [byWorkflow] = yield* executions.cancel({
          workflowId: b.workflowId,
          executionId: b.id,
          error: null,
          stepError: "execution cancelled"
        })
        expect(byWorkflow).toMatchObject({ id: b.id, status: "CANCELLED", error: null })
        expect(yield* executions.cancel({ workflowId: b.workflowId, executionId: b.id, error: null, stepError: "execution cancelled" }))
          .toEqual([])
      }))

    it.effect("writes a batch back: changed executions, step history, timers and billing holds", () =>
      Effect.gen(function*() {
        const executions = yield* WorkflowExecutions
        const sql = yield* SqlClient.SqlClient
        const f = yield* fixture
        const exec = (yield* start(f))!
        const untouched = (yield* start(yield* fixture))!
        const timerId = uuidv7()
        const stepId = uuidv7()
        const batch = {
          executions: [
            { ...exec, status: "WAITING" as const, currentStepId: f.delay, timerId, context: { plan: "pro", seen: 1 }, dirty: true },
            { ...untouched, status: "FAILED" as const, dirty: false }
          ],
          steps: [{
            id: stepId,
            executionId: exec.id,
            stepId: f.delay,
            stepType: "DELAY",
            status: "WAITING" as const,
            output: { dueAt: NOW },
            error: null,
            startedAt: NOW,
            finishedAt: null
          }],
          clearedTimers: [],
          newTimers: [{ executionId: exec.id, id: timerId, stepId: f.delay, dueAt: "2026-03-02T12:00:00.000Z" }],
          holds: [{ id: f.workflow, reason: "the monthly limit is reached" }],
          at: NOW
        }
        yield* executions.write(f.project, batch)
        const [row] = yield* executions.lock(f.project, [exec.id])
        expect(row).toMatchObject({ status: "WAITING", currentStepId: f.delay, timerId, context: { plan: "pro", seen: 1 } })
        const [other] = yield* sql<{ status: string }>`SELECT status FROM workflow_executions WHERE id = ${untouched.id}`
        expect(other!.status).toBe("RUNNING")
        const [timer] = yield* sql<
          { id: string; partition: number; due_at: Date }
        >`SELECT id, partition, due_at FROM workflow_timers WHERE execution_id = ${exec.id}`
        expect(timer).toMatchObject({ id: timerId, partition: 3 })
        expect(timer!.due_at.toISOString()).toBe("2026-03-02T12:00:00.000Z")
        const [hold] = yield* sql<{ billing_hold: string | null }>`SELECT billing_hold FROM workflows WHERE id = ${f.workflow}`
        expect(hold!.billing_hold).toBe("the monthly limit is reached")

        // Written again with the step done and the timer cleared: one history row, its output kept.
        yield* executions.write(f.project, {
          ...batch,
          executions: [{ ...batch.executions[0]!, status: "COMPLETED", timerId: null, finishedAt: NOW }],
          steps: [{ ...batch.steps[0]!, status: "COMPLETED", output: null, finishedAt: NOW }],
          clearedTimers: [exec.id],
          newTimers: [],
          holds: [{ id: f.workflow, reason: null }]
        })
        const history = yield* sql<{ id: string; status: string; output: unknown }>`
          SELECT id, status, output FROM workflow_step_executions WHERE execution_id = ${exec.id}`
        expect(history).toEqual([{ id: stepId, status: "COMPLETED", output: { dueAt: NOW } }])
        expect(yield* sql`SELECT 1 FROM workflow_timers WHERE execution_id = ${exec.id}`).toEqual([])
        const [cleared] = yield* sql<{ billing_hold: string | null }>`SELECT billing_hold FROM workflows WHERE id = ${f.workflow}`
        expect(cleared!.billing_hold).toBeNull()
      }))

    it.effect("loads a project's definitions as rows", () =>
      Effect.gen(function*() {
        const executions = yield* WorkflowExecutions
        const f = yield* fixture
        const rows = yield* executions.definitions(f.project)
        expect(rows.workflows.map((row) => row.id)).toEqual([f.workflow])
        expect(rows.steps.map((row) => row.type).sort()).toEqual(["DELAY", "TRIGGER"])
        expect(rows.transitions).toEqual([])
      }))
  })
})
