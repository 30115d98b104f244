/**
 * Workflow definitions (steps, transitions) and reads and cancellations of executions. Executions are
 * started here only by recording them (POST /workflows/:id/executions): the project's actor advances
 * them (src/workflows/engine.ts). Every definition change tells the actor through the outbox, so it
 * reloads its cached graphs in order with the project's other messages.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import {
  ExecutionActive,
  ExecutionNotActive,
  ReentryNotAllowed,
  TemplateNotFound,
  TransitionExists,
  WorkflowDisabled,
  WorkflowHasActiveExecutions
} from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { Outbox, type OutboxRow } from "../stream/Outbox.ts"
import type { WorkflowMessage } from "../stream/messages.ts"
import type { ExecutionStatus, StepType } from "../domain/workflowSteps.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { WorkflowExecutions } from "./WorkflowExecutions.ts"
import {
  decodeStepRows,
  decodeTransitionRows,
  decodeWorkflowRows,
  STEP_COLUMNS,
  TRANSITION_COLUMNS,
  WORKFLOW_COLUMNS,
  type WorkflowRow
} from "./workflowRows.ts"
import {
  type Execution,
  type ListedExecution,
  type StepExecution,
  type StoredStep,
  type StoredTransition,
  toStep,
  toTransition,
  toWorkflow,
  type WorkflowDetail
} from "./workflowRecords.ts"
import { makeExecutionControl } from "./workflowExecutionControl.ts"

export interface WorkflowChanges {
  readonly name?: string | undefined
  readonly description?: string | null | undefined
  readonly triggerType?: "EVENT" | "MANUAL" | undefined
  readonly eventName?: string | undefined
  readonly enabled?: boolean | undefined
  readonly allowReentry?: boolean | undefined
}

type Sql<A, E = never> = Effect.Effect<A, E | PersistenceError>

export class Workflows extends Context.Service<Workflows, {
  readonly create: (
    projectId: string,
    input: { name: string; description: string | null; eventName: string | null; allowReentry: boolean }
  ) => Sql<WorkflowDetail>
  readonly list: (projectId: string) => Sql<ReadonlyArray<WorkflowDetail>>
  readonly get: (projectId: string, id: string) => Sql<WorkflowDetail | undefined>
  readonly update: (projectId: string, id: string, input: WorkflowChanges) => Sql<WorkflowDetail | undefined>
  readonly remove: (projectId: string, id: string) => Sql<boolean, WorkflowHasActiveExecutions>
  /** Structural edits run under the workflow's row lock and are refused while executions are active. */
  readonly structural: <A, E>(
    projectId: string,
    workflowId: string,
    edit: Effect.Effect<A, E, SqlClient.SqlClient>
  ) => Sql<A, E | WorkflowHasActiveExecutions>
  /** A SEND_EMAIL step's template must be the project's (TemplateNotFound), and cannot be deleted until this commits. */
  readonly insertStep: (
    projectId: string,
    workflowId: string,
    input: { type: StepType; name: string; config: Record<string, unknown>; position: unknown }
  ) => Sql<StoredStep, TemplateNotFound>
  readonly updateStep: (
    projectId: string,
    workflowId: string,
    stepId: string,
    input: { name?: string | undefined; config?: Record<string, unknown> | undefined; position?: unknown }
  ) => Sql<StoredStep | undefined, TemplateNotFound>
  readonly deleteStep: (workflowId: string, stepId: string, spliceTo: string | undefined) => Sql<void>
  /** Fails with TransitionExists when that way out of the step is taken (the unique index, under concurrent edits). */
  readonly insertTransition: (
    workflowId: string,
    input: { fromStepId: string; toStepId: string; branch: string | null; waitOutcome: string | null }
  ) => Sql<StoredTransition, TransitionExists>
  readonly deleteTransition: (workflowId: string, transitionId: string) => Sql<boolean>
  /** Records a manual start (RUNNING at the TRIGGER step) and tells the actor to advance it. */
  /** Only while the workflow is enabled (WorkflowDisabled otherwise), as its triggers start executions. */
  readonly startExecution: (
    workflow: WorkflowDetail,
    contactId: string,
    context: Record<string, unknown>
  ) => Sql<Execution, WorkflowDisabled | ExecutionActive | ReentryNotAllowed>
  readonly listExecutions: (
    workflowId: string,
    status: ExecutionStatus | undefined,
    page: number,
    pageSize: number
  ) => Sql<{ data: ReadonlyArray<ListedExecution>; total: number }>
  readonly getExecution: (
    workflowId: string,
    executionId: string
  ) => Sql<(ListedExecution & { steps: ReadonlyArray<StepExecution> }) | undefined>
  /** Cancels one active execution (its timer goes; a due timer or a late webhook outcome is then a no-op). */
  readonly cancel: (workflowId: string, executionId: string) => Sql<Execution | undefined, ExecutionNotActive>
  readonly cancelAll: (workflowId: string) => Sql<number>
  /** Event names seen in the project and the data keys their recent events carry. */
  readonly eventFields: (projectId: string) => Sql<ReadonlyArray<{ name: string; dataKeys: ReadonlyArray<string> }>>
  readonly webhookSecret: (projectId: string) => Sql<string>
}>()("app/store/Workflows") {
  static readonly layer = Layer.effect(
    Workflows,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const executions = yield* WorkflowExecutions

      /**
       * Tells the project's actor: committed to the outbox in the caller's transaction, and published
       * again right after the commit (same Nats-Msg-Id, so one copy is kept): a track accepted after
       * the api answered is then behind it in the stream (a workflow disabled stops triggering at once).
       */
      const notify = (message: WorkflowMessage) => outbox.append([message])
      type Command = OutboxRow
      const changed = (projectId: string, into: Array<Command>) =>
        Effect.map(notify({ kind: "workflow", projectId, type: "changed" }), (rows) => void into.push(...rows))
      const publishNow = (commands: ReadonlyArray<Command>) => outbox.publishNow(commands)

      const details = Effect.fnUntraced(function*(rows: ReadonlyArray<WorkflowRow>) {
        if (rows.length === 0) return []
        const ids = rows.map((row) => row.id)
        const [steps, transitions] = yield* Effect.all([
          sql`SELECT ${sql.literal(STEP_COLUMNS)} FROM workflow_steps WHERE workflow_id IN ${sql.in(ids)} ORDER BY created_at, id`.pipe(
            Effect.flatMap(decodeStepRows)
          ),
          sql`
            SELECT ${sql.literal(TRANSITION_COLUMNS)} FROM workflow_transitions WHERE workflow_id IN ${sql.in(ids)} ORDER BY created_at, id`
            .pipe(
              Effect.flatMap(decodeTransitionRows)
            )
        ], { concurrency: 2 })
        return rows.map((row): WorkflowDetail => ({
          ...toWorkflow(row),
          steps: steps.filter((step) => step.workflow_id === row.id).map(toStep),
          transitions: transitions.filter((transition) => transition.workflow_id === row.id).map(toTransition)
        }))
      })

      const get = Effect.fn("Workflows.get")(function*(projectId: string, id: string) {
        const rows = yield* sql`SELECT ${sql.literal(WORKFLOW_COLUMNS)} FROM workflows WHERE project_id = ${projectId} AND id = ${id}`.pipe(
          Effect.flatMap(decodeWorkflowRows)
        )
        return (yield* details(rows))[0]
      }, mapSqlError)

      const create = Effect.fn("Workflows.create")(
        function*(projectId: string, input: { name: string; description: string | null; eventName: string | null; allowReentry: boolean }) {
          const id = uuidv7()
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const triggerConfig = JSON.stringify(input.eventName === null ? {} : { eventName: input.eventName })
          const commands: Array<Command> = []
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO workflows (id, project_id, name, description, trigger_type, trigger_config, enabled, allow_reentry, created_at, updated_at)
                     VALUES (${id}, ${projectId}, ${input.name}, ${input.description}, 'EVENT', ${triggerConfig}::jsonb, false,
                             ${input.allowReentry}, ${now}::timestamptz, ${now}::timestamptz)`
            yield* sql`INSERT INTO workflow_steps (id, workflow_id, type, name, config, created_at)
                     VALUES (${uuidv7()}, ${id}, 'TRIGGER', 'Trigger', ${triggerConfig}::jsonb, ${now}::timestamptz)`
            yield* changed(projectId, commands)
          }))
          yield* publishNow(commands)
          return (yield* get(projectId, id))!
        },
        mapSqlError
      )

      const list = Effect.fn("Workflows.list")(function*(projectId: string) {
        return yield* details(
          yield* sql`
          SELECT ${sql.literal(WORKFLOW_COLUMNS)} FROM workflows WHERE project_id = ${projectId} ORDER BY created_at DESC, id DESC`.pipe(
            Effect.flatMap(decodeWorkflowRows)
          )
        )
      }, mapSqlError)

      const update = Effect.fn("Workflows.update")(function*(projectId: string, id: string, input: WorkflowChanges) {
        const commands: Array<Command> = []
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          const eventConfig = input.eventName === undefined ? null : JSON.stringify({ eventName: input.eventName })
          const rows = yield* sql<{ id: string }>`
            UPDATE workflows SET
              name = COALESCE(${input.name ?? null}, name),
              description = CASE WHEN ${input.description !== undefined} THEN ${input.description ?? null} ELSE description END,
              trigger_type = COALESCE(${input.triggerType ?? null}, trigger_type),
              trigger_config = COALESCE(${eventConfig}::jsonb, trigger_config),
              enabled = COALESCE(${input.enabled ?? null}::boolean, enabled),
              allow_reentry = COALESCE(${input.allowReentry ?? null}::boolean, allow_reentry),
              updated_at = now()
            WHERE project_id = ${projectId} AND id = ${id}
            RETURNING id`
          if (rows.length > 0 && eventConfig !== null) {
            yield* sql`UPDATE workflow_steps SET config = ${eventConfig}::jsonb WHERE workflow_id = ${id} AND type = 'TRIGGER'`
          }
          if (rows.length > 0) yield* changed(projectId, commands)
          return rows
        }))
        yield* publishNow(commands)
        return rows.length > 0 ? yield* get(projectId, id) : undefined
      }, mapSqlError)

      const hasActive = (workflowId: string) =>
        Effect.map(
          sql`SELECT 1 FROM workflow_executions WHERE workflow_id = ${workflowId} AND status IN ('RUNNING', 'WAITING') LIMIT 1`,
          (rows) => rows.length > 0
        )

      const structural = <A, E>(projectId: string, workflowId: string, edit: Effect.Effect<A, E, SqlClient.SqlClient>) => {
        const commands: Array<Command> = []
        return sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT 1 FROM workflows WHERE id = ${workflowId} FOR UPDATE`
          if (yield* hasActive(workflowId)) return yield* WorkflowHasActiveExecutions.of()
          const result = yield* edit
          yield* sql`UPDATE workflows SET updated_at = now() WHERE id = ${workflowId}`
          yield* changed(projectId, commands)
          return result
        })).pipe(Effect.tap(() => publishNow(commands)), Effect.provideService(SqlClient.SqlClient, sql), mapSqlError)
      }

      const remove = Effect.fn("Workflows.remove")(function*(projectId: string, id: string) {
        return yield* structural(
          projectId,
          id,
          Effect.map(
            sql`DELETE FROM workflows WHERE project_id = ${projectId} AND id = ${id} RETURNING id`,
            (rows) => rows.length > 0
          )
        )
      }, mapSqlError)

      /**
       * The template a step config sends, held FOR SHARE until the caller's transaction commits: missing (or
       * another project's) is TemplateNotFound, and a concurrent template delete (Templates.remove, which
       * locks it FOR UPDATE) waits and then sees the step.
       */
      const holdTemplate = (projectId: string, config: Record<string, unknown> | undefined) =>
        Effect.gen(function*() {
          const templateId = config?.templateId
          // The step rules refused anything but a UUID (src/workflows/graph.ts).
          if (typeof templateId !== "string") return
          const found = yield* sql`SELECT 1 FROM templates WHERE project_id = ${projectId} AND id = ${templateId}::uuid FOR SHARE`
          if (found.length === 0) return yield* TemplateNotFound.of()
        })

      const insertStep = Effect.fn("Workflows.insertStep")(
        function*(
          projectId: string,
          workflowId: string,
          input: { type: StepType; name: string; config: Record<string, unknown>; position: unknown }
        ) {
          if (input.type === "SEND_EMAIL") yield* holdTemplate(projectId, input.config)
          const [row] = yield* sql`
          INSERT INTO workflow_steps (id, workflow_id, type, name, config, position, created_at)
          VALUES (${uuidv7()}, ${workflowId}, ${input.type}, ${input.name}, ${JSON.stringify(input.config)}::jsonb,
                  ${input.position === undefined || input.position === null ? null : JSON.stringify(input.position)}::jsonb, now())
          RETURNING ${sql.literal(STEP_COLUMNS)}`.pipe(Effect.flatMap(decodeStepRows))
          return toStep(row!)
        },
        mapSqlError
      )

      const updateStep = Effect.fn("Workflows.updateStep")(
        function*(
          projectId: string,
          workflowId: string,
          stepId: string,
          input: { name?: string | undefined; config?: Record<string, unknown> | undefined; position?: unknown }
        ) {
          const commands: Array<Command> = []
          return yield* sql.withTransaction(Effect.gen(function*() {
            if (input.config !== undefined) {
              const [step] = yield* sql<
                { type: string }
              >`SELECT type FROM workflow_steps WHERE workflow_id = ${workflowId} AND id = ${stepId}`
              if (step?.type === "SEND_EMAIL") yield* holdTemplate(projectId, input.config)
            }
            const [row] = yield* sql`
            UPDATE workflow_steps SET
              name = COALESCE(${input.name ?? null}, name),
              config = COALESCE(${input.config === undefined ? null : JSON.stringify(input.config)}::jsonb, config),
              position = CASE WHEN ${input.position !== undefined} THEN ${
              input.position === undefined || input.position === null ? null : JSON.stringify(input.position)
            }::jsonb ELSE position END
            WHERE workflow_id = ${workflowId} AND id = ${stepId}
            RETURNING ${sql.literal(STEP_COLUMNS)}`.pipe(Effect.flatMap(decodeStepRows))
            if (row) {
              yield* sql`UPDATE workflows SET updated_at = now() WHERE id = ${workflowId}`
              yield* changed(projectId, commands)
            }
            return row ? toStep(row) : undefined
          })).pipe(Effect.tap(() => publishNow(commands)))
        },
        mapSqlError
      )

      const deleteStep = Effect.fn("Workflows.deleteStep")(function*(workflowId: string, stepId: string, spliceTo: string | undefined) {
        if (spliceTo !== undefined) {
          yield* sql`UPDATE workflow_transitions SET to_step_id = ${spliceTo} WHERE workflow_id = ${workflowId} AND to_step_id = ${stepId}`
        }
        yield* sql`DELETE FROM workflow_steps WHERE workflow_id = ${workflowId} AND id = ${stepId}`
      }, mapSqlError)

      const insertTransition = Effect.fn("Workflows.insertTransition")(
        function*(workflowId: string, input: { fromStepId: string; toStepId: string; branch: string | null; waitOutcome: string | null }) {
          const [row] = yield* sql`
          INSERT INTO workflow_transitions (id, workflow_id, from_step_id, to_step_id, branch, wait_outcome, created_at)
          VALUES (${uuidv7()}, ${workflowId}, ${input.fromStepId}, ${input.toStepId}, ${input.branch}, ${input.waitOutcome}, now())
          RETURNING ${sql.literal(TRANSITION_COLUMNS)}`.pipe(
            // A concurrent edit took the same way out first (unique index): the graph rule, not a 500.
            Effect.catchTag(
              "SqlError",
              (error): Effect.Effect<never, SqlError.SqlError | TransitionExists> =>
                error.reason._tag === "UniqueViolation" ? Effect.fail(TransitionExists.of()) : Effect.fail(error)
            ),
            Effect.flatMap(decodeTransitionRows)
          )
          return toTransition(row!)
        },
        mapSqlError
      )

      const deleteTransition = Effect.fn("Workflows.deleteTransition")(function*(workflowId: string, transitionId: string) {
        const rows = yield* sql`DELETE FROM workflow_transitions WHERE workflow_id = ${workflowId} AND id = ${transitionId} RETURNING id`
        return rows.length > 0
      }, mapSqlError)

      const { startExecution, listExecutions, getExecution, cancel, cancelAll } = makeExecutionControl({
        sql,
        outbox,
        executions,
        notify,
        publishNow
      })

      const eventFields = Effect.fn("Workflows.eventFields")(function*(projectId: string) {
        // Every name the project has seen; data keys from its 10,000 most recent events.
        const [named, keyed] = yield* Effect.all([
          sql<{ name: string }>`SELECT DISTINCT name FROM event_aggregates WHERE project_id = ${projectId} ORDER BY name`,
          sql<{ name: string; keys: Array<string> }>`
            SELECT r.name, array_agg(DISTINCT k ORDER BY k) AS keys
            FROM (SELECT name, data FROM events WHERE project_id = ${projectId} ORDER BY created_at DESC LIMIT 10000) r,
                 jsonb_object_keys(CASE WHEN jsonb_typeof(r.data) = 'object' THEN r.data ELSE '{}'::jsonb END) k
            GROUP BY r.name`
        ], { concurrency: 2 })
        const keys = new Map(keyed.map((row) => [row.name, row.keys]))
        return named.map((row) => ({ name: row.name, dataKeys: keys.get(row.name) ?? [] }))
      }, mapSqlError)

      const webhookSecret = Effect.fn("Workflows.webhookSecret")(function*(projectId: string) {
        const [row] = yield* sql<{ webhook_secret: string }>`SELECT webhook_secret FROM projects WHERE id = ${projectId}`
        return row!.webhook_secret
      }, mapSqlError)

      return Workflows.of({
        create,
        list,
        get,
        update,
        remove,
        structural,
        insertStep,
        updateStep,
        deleteStep,
        insertTransition,
        deleteTransition,
        startExecution,
        listExecutions,
        getExecution,
        cancel,
        cancelAll,
        eventFields,
        webhookSecret
      })
    })
  ).pipe(Layer.provide(WorkflowExecutions.layer))
}
