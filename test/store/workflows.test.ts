/**
 * The Workflows repository at the layer level, against a real migrated Postgres of its own (no service
 * processes, no NATS): definitions with their TRIGGER step, steps and transitions (a way out taken twice
 * is TransitionExists), structural edits refused while executions are active, manual starts and
 * cancellations with their typed refusals, every change told to the project's actor through the outbox,
 * and rows decoded with their schema (a row that does not fit is a PersistenceError).
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import {
  ExecutionActive,
  ExecutionNotActive,
  ReentryNotAllowed,
  TransitionExists,
  WorkflowDisabled,
  WorkflowHasActiveExecutions
} from "../../src/domain/errors.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { PersistenceError } from "../../src/store/PersistenceError.ts"
import { Workflows } from "../../src/store/Workflows.ts"
import { insertProject, OutboxWithoutNats, outboxOf, TestDatabase } from "../support/database.ts"

const Repositories = Workflows.layer.pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

const insertContact = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = uuidv7()
    yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
               VALUES (${id}, ${projectId}, ${`${id}@example.org`}, true, now(), now())`
    return id
  })

const draft = { name: "Onboarding", description: null, eventName: "signed_up", allowReentry: false }

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("Workflows", (it) => {
  describe("definitions", () => {
    it.effect("creates a workflow with its TRIGGER step, inside its project only; each change is told to the actor", () =>
      Effect.gen(function*() {
        const workflows = yield* Workflows
        const [project, other] = [yield* insertProject, yield* insertProject]
        const created = yield* workflows.create(project, draft)
        expect(created).toMatchObject({
          projectId: project,
          name: "Onboarding",
          triggerType: "EVENT",
          triggerConfig: { eventName: "signed_up" },
          enabled: false,
          allowReentry: false,
          billingHold: null,
          transitions: []
        })
        expect(created.steps.map((step) => [step.type, step.config])).toEqual([["TRIGGER", { eventName: "signed_up" }]])
        expect(created.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

        const toldOnCreate = (yield* outboxOf(project)).length
        expect(toldOnCreate).toBeGreaterThan(0)
        expect(yield* workflows.get(other, created.id)).toBeUndefined()
        expect(yield* workflows.list(other)).toEqual([])
        expect((yield* workflows.list(project)).map((workflow) => workflow.id)).toEqual([created.id])

        const updated = yield* workflows.update(project, created.id, { enabled: true, eventName: "paid" })
        expect(updated).toMatchObject({ enabled: true, triggerConfig: { eventName: "paid" } })
        expect(updated!.steps[0]!.config).toEqual({ eventName: "paid" })
        expect(yield* workflows.update(other, created.id, { enabled: false })).toBeUndefined()

        // Told again, as many messages as on create, each a `changed` for the project's actor.
        const told = (yield* outboxOf(project)).map((row) => [row.payload.kind, row.payload.type])
        expect(told.length).toBe(2 * toldOnCreate)
        expect(new Set(told.map(String))).toEqual(new Set(["workflow,changed"]))
        expect(yield* outboxOf(other)).toEqual([])
      }))

    it.effect("adds steps and transitions; a way out of a step taken twice is TransitionExists", () =>
      Effect.gen(function*() {
        const workflows = yield* Workflows
        const project = yield* insertProject
        const workflow = yield* workflows.create(project, draft)
        const trigger = workflow.steps[0]!
        const delay = yield* workflows.insertStep(project, workflow.id, {
          type: "DELAY",
          name: "Wait a day",
          config: { amount: 1, unit: "days" },
          position: { x: 10, y: 20 }
        })
        expect(delay).toMatchObject({ type: "DELAY", config: { amount: 1, unit: "days" }, position: { x: 10, y: 20 } })
        const renamed = yield* workflows.updateStep(project, workflow.id, delay.id, { name: "Wait" })
        expect(renamed).toMatchObject({ name: "Wait", position: { x: 10, y: 20 } })
        expect(yield* workflows.updateStep(project, workflow.id, uuidv7(), { name: "x" })).toBeUndefined()

        const way = { fromStepId: trigger.id, toStepId: delay.id, branch: null, waitOutcome: null }
        const transition = yield* workflows.insertTransition(workflow.id, way)
        expect(transition).toMatchObject({ fromStepId: trigger.id, toStepId: delay.id, branch: null, waitOutcome: null })
        const again = yield* Effect.flip(workflows.insertTransition(workflow.id, way))
        assert.instanceOf(again, TransitionExists)

        const detail = (yield* workflows.get(project, workflow.id))!
        expect(detail.steps.map((step) => step.id)).toEqual([trigger.id, delay.id])
        expect(detail.transitions.map((t) => t.id)).toEqual([transition.id])
        expect(yield* workflows.deleteTransition(workflow.id, transition.id)).toBe(true)
        expect(yield* workflows.deleteTransition(workflow.id, transition.id)).toBe(false)
      }))

    it.effect("decodes its rows with their schema: a row that does not fit is a PersistenceError", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const workflows = yield* Workflows
        const project = yield* insertProject
        const workflow = yield* workflows.create(project, draft)
        yield* sql`UPDATE workflow_steps SET position = '{"x":"left","y":0}'::jsonb WHERE workflow_id = ${workflow.id}`
        const error = yield* Effect.flip(workflows.get(project, workflow.id))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toContain("x")
      }))
  })

  describe("executions", () => {
    it.effect("starts manually once at a time, never again without reentry; structural edits wait for none to be active", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const workflows = yield* Workflows
        const project = yield* insertProject
        const contact = yield* insertContact(project)
        const workflow = yield* workflows.create(project, draft)
        // Only an enabled workflow starts executions, by hand too.
        assert.instanceOf(yield* Effect.flip(workflows.startExecution(workflow, contact, {})), WorkflowDisabled)
        yield* workflows.update(project, workflow.id, { enabled: true })
        const started = yield* workflows.startExecution(workflow, contact, { plan: "pro" })
        expect(started).toMatchObject({
          workflowId: workflow.id,
          contactId: contact,
          status: "RUNNING",
          currentStepId: workflow.steps[0]!.id,
          context: { plan: "pro" },
          completedAt: null
        })
        assert.instanceOf(yield* Effect.flip(workflows.startExecution(workflow, contact, {})), ExecutionActive)
        assert.instanceOf(
          yield* Effect.flip(workflows.structural(project, workflow.id, Effect.void)),
          WorkflowHasActiveExecutions
        )
        expect(yield* workflows.remove(project, workflow.id).pipe(Effect.flip)).toBeInstanceOf(WorkflowHasActiveExecutions)
        const advance = (yield* outboxOf(project)).filter((row) => row.payload.type === "advance")
        expect(advance.map((row) => row.payload.executionId)).toEqual([started.id])

        yield* sql`UPDATE workflow_executions SET status = 'COMPLETED', finished_at = now() WHERE id = ${started.id}`
        assert.instanceOf(yield* Effect.flip(workflows.startExecution(workflow, contact, {})), ReentryNotAllowed)
        const page = yield* workflows.listExecutions(workflow.id, "COMPLETED", 1, 10)
        expect(page.total).toBe(1)
        expect(page.data[0]).toMatchObject({ id: started.id, status: "COMPLETED" })
        expect(page.data[0]!.completedAt).not.toBeNull()
        expect(yield* workflows.remove(project, workflow.id)).toBe(true)
        expect(yield* workflows.get(project, workflow.id)).toBeUndefined()
      }))

    it.effect("cancels an active execution once (then ExecutionNotActive); an unknown one is undefined", () =>
      Effect.gen(function*() {
        const workflows = yield* Workflows
        const project = yield* insertProject
        const workflow = yield* workflows.create(project, { ...draft, allowReentry: true })
        yield* workflows.update(project, workflow.id, { enabled: true })
        const a = yield* workflows.startExecution(workflow, yield* insertContact(project), {})
        const b = yield* workflows.startExecution(workflow, yield* insertContact(project), {})
        const cancelled = yield* workflows.cancel(workflow.id, a.id)
        expect(cancelled).toMatchObject({ id: a.id, status: "CANCELLED", error: null })
        expect(cancelled!.completedAt).not.toBeNull()
        assert.instanceOf(yield* Effect.flip(workflows.cancel(workflow.id, a.id)), ExecutionNotActive)
        expect(yield* workflows.cancel(workflow.id, uuidv7())).toBeUndefined()
        expect(yield* workflows.cancelAll(workflow.id)).toBe(1)
        const sql = yield* SqlClient.SqlClient
        const trigger = workflow.steps[0]!
        yield* sql`INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, output, started_at, finished_at)
                   VALUES (${uuidv7()}, ${b.id}, ${trigger.id}, 'TRIGGER', ${project}, 0, 'COMPLETED', '{"ok":true}', now(), now())`
        const detail = yield* workflows.getExecution(workflow.id, b.id)
        expect(detail).toMatchObject({ id: b.id, status: "CANCELLED" })
        expect(detail!.steps).toMatchObject([{
          stepId: trigger.id,
          stepType: "TRIGGER",
          status: "COMPLETED",
          output: { ok: true },
          error: null
        }])
        expect(detail!.steps[0]!.completedAt).toMatch(/Z$/)
      }))
  })
})
