/**
 * Workflow definitions (steps, transitions) and reads and cancellations of executions. Executions are
 * started here only by recording them (POST /workflows/:id/executions): the project's actor advances
 * them (src/workflows/engine.ts). Every definition change tells the actor through the outbox, so it
 * reloads its cached graphs in order with the project's other messages.
 */
import type { ContactId, ExecutionId, ProjectId, WorkflowId } from "../domain/identifiers.ts"
import { Context, Effect, Layer } from "effect"
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
import type { ExecutionStatus, Step, StepType, Transition } from "../domain/workflowSteps.ts"
import { isoOrNull } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { WorkflowExecutions } from "./WorkflowExecutions.ts"
import {
  decodeExecutionRows,
  decodeListedExecutionRows,
  decodeStepExecutionRows,
  decodeStepRows,
  decodeTransitionRows,
  decodeWorkflowRows,
  EXECUTION_COLUMNS,
  EXECUTION_WITH_EMAIL_COLUMNS,
  type ExecutionRow,
  type ListedExecutionRow,
  STEP_COLUMNS,
  STEP_EXECUTION_COLUMNS,
  type StepRow,
  type StepStatus,
  TRANSITION_COLUMNS,
  type TransitionRow,
  WORKFLOW_COLUMNS,
  type WorkflowRow
} from "./workflowRows.ts"

export interface Workflow {
  readonly id: WorkflowId
  readonly projectId: ProjectId
  readonly name: string
  readonly description: string | null
  readonly triggerType: "EVENT" | "MANUAL"
  readonly triggerConfig: { readonly eventName?: string }
  readonly enabled: boolean
  readonly allowReentry: boolean
  /** Why the workflow's SEND_EMAIL steps wait (its monthly billing cap reached); null while they may send. */
  readonly billingHold: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface StoredStep extends Step {
  readonly position: { readonly x: number; readonly y: number } | null
  readonly createdAt: string
}

export interface StoredTransition extends Transition {
  readonly createdAt: string
}

export interface WorkflowDetail extends Workflow {
  readonly steps: ReadonlyArray<StoredStep>
  readonly transitions: ReadonlyArray<StoredTransition>
}

export interface StepExecution {
  readonly id: string
  readonly stepId: string
  readonly stepType: string
  readonly status: StepStatus
  readonly output: unknown
  readonly error: string | null
  readonly attempts: number
  readonly startedAt: string
  readonly completedAt: string | null
}

export interface Execution {
  readonly id: ExecutionId
  readonly workflowId: WorkflowId
  readonly contactId: ContactId
  readonly status: ExecutionStatus
  readonly currentStepId: string | null
  readonly context: Record<string, unknown>
  readonly exitReason: string | null
  readonly error: string | null
  readonly startedAt: string
  readonly updatedAt: string
  readonly completedAt: string | null
}

/** An execution with its contact's email, for people to read (null once the contact is deleted). */
export interface ListedExecution extends Execution {
  readonly contactEmail: string | null
}

export const toWorkflow = (row: WorkflowRow): Workflow => ({
  id: row.id,
  projectId: row.project_id,
  name: row.name,
  description: row.description,
  triggerType: row.trigger_type,
  triggerConfig: row.trigger_config,
  enabled: row.enabled,
  allowReentry: row.allow_reentry,
  billingHold: row.billing_hold ?? null,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

export const toStep = (row: StepRow): StoredStep => ({
  id: row.id,
  type: row.type,
  name: row.name,
  config: row.config,
  position: row.position,
  createdAt: row.created_at.toISOString()
})

export const toTransition = (row: TransitionRow): StoredTransition => ({
  id: row.id,
  fromStepId: row.from_step_id,
  toStepId: row.to_step_id,
  branch: row.branch,
  waitOutcome: row.wait_outcome,
  createdAt: row.created_at.toISOString()
})

const toExecution = (row: ExecutionRow): Execution => ({
  id: row.id,
  workflowId: row.workflow_id,
  contactId: row.contact_id,
  status: row.status,
  currentStepId: row.current_step_id,
  context: row.context,
  exitReason: row.exit_reason,
  error: row.error,
  startedAt: row.started_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  completedAt: isoOrNull(row.finished_at)
})

const toListedExecution = (row: ListedExecutionRow): ListedExecution => ({ ...toExecution(row), contactEmail: row.contact_email })

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
          const now = new Date().toISOString()
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

      const startExecution = Effect.fn("Workflows.startExecution")(
        function*(workflow: WorkflowDetail, contactId: string, context: Record<string, unknown>) {
          const trigger = workflow.steps.find((step) => step.type === "TRIGGER")
          const id = uuidv7()
          const commands: Array<Command> = []
          return yield* sql.withTransaction(Effect.gen(function*() {
            // As the actor's starts do: a concurrent structural edit sees this execution or precedes it.
            const [current] = yield* sql<{ enabled: boolean }>`SELECT enabled FROM workflows WHERE id = ${workflow.id} FOR SHARE`
            // Read under the lock: a workflow being disabled concurrently is either seen disabled or disabled after this start.
            if (!current?.enabled) return yield* WorkflowDisabled.of()
            const previous = yield* sql<{ status: string }>`
            SELECT status FROM workflow_executions WHERE workflow_id = ${workflow.id} AND contact_id = ${contactId}
            ORDER BY (status IN ('RUNNING', 'WAITING')) DESC LIMIT 1`
            if (previous[0] && (previous[0].status === "RUNNING" || previous[0].status === "WAITING")) return yield* ExecutionActive.of()
            if (previous[0] && !workflow.allowReentry) return yield* ReentryNotAllowed.of()
            const rows = yield* sql`
            INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context, started_at, updated_at)
            VALUES (${id}, ${workflow.id}, ${workflow.projectId}, ${
              outbox.lanes.partitionOf(workflow.projectId, outbox.lanes.laneOf(contactId))
            }, ${contactId},
                    'RUNNING', ${trigger?.id ?? null}, ${JSON.stringify(context)}::jsonb, now(), now())
            ON CONFLICT DO NOTHING
            RETURNING ${sql.literal(EXECUTION_COLUMNS)}`.pipe(Effect.flatMap(decodeExecutionRows))
            if (rows.length === 0) return yield* ExecutionActive.of()
            commands.push(
              ...(yield* notify({ kind: "workflow", projectId: workflow.projectId, type: "advance", executionId: id, contactId }))
            )
            return toExecution(rows[0]!)
          })).pipe(Effect.tap(() => publishNow(commands)))
        },
        mapSqlError
      )

      const listExecutions = Effect.fn("Workflows.listExecutions")(
        function*(workflowId: string, status: ExecutionStatus | undefined, page: number, pageSize: number) {
          const where = status === undefined ? sql`workflow_id = ${workflowId}` : sql`workflow_id = ${workflowId} AND status = ${status}`
          const [rows, [count]] = yield* Effect.all([
            sql`SELECT ${sql.literal(EXECUTION_WITH_EMAIL_COLUMNS)} FROM workflow_executions WHERE ${where}
              ORDER BY started_at DESC, id DESC LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`.pipe(
              Effect.flatMap(decodeListedExecutionRows)
            ),
            sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_executions WHERE ${where}`
          ], { concurrency: 2 })
          return { data: rows.map(toListedExecution), total: count?.n ?? 0 }
        },
        mapSqlError
      )

      const getExecution = Effect.fn("Workflows.getExecution")(function*(workflowId: string, executionId: string) {
        const [row] = yield* sql`
          SELECT ${
          sql.literal(EXECUTION_WITH_EMAIL_COLUMNS)
        } FROM workflow_executions WHERE workflow_id = ${workflowId} AND id = ${executionId}`.pipe(
          Effect.flatMap(decodeListedExecutionRows)
        )
        if (!row) return undefined
        const steps = yield* sql`
          SELECT ${sql.literal(STEP_EXECUTION_COLUMNS)} FROM workflow_step_executions
          WHERE execution_id = ${executionId} ORDER BY started_at, id`.pipe(Effect.flatMap(decodeStepExecutionRows))
        return {
          ...toListedExecution(row),
          steps: steps.map((step): StepExecution => ({
            id: step.id,
            stepId: step.step_id,
            stepType: step.step_type,
            status: step.status,
            output: step.output,
            error: step.error,
            attempts: step.attempts,
            startedAt: step.started_at.toISOString(),
            completedAt: isoOrNull(step.finished_at)
          }))
        }
      }, mapSqlError)

      // The step it was on (a delay, a wait, a webhook not yet attempted) ends with it.
      const cancelWhere = (where: { workflowId: string; executionId?: string }) =>
        sql.withTransaction(executions.cancel({ ...where, error: null, stepError: "execution cancelled" }))

      const cancel = Effect.fn("Workflows.cancel")(function*(workflowId: string, executionId: string) {
        const rows = yield* cancelWhere({ workflowId, executionId })
        if (rows[0]) return toExecution(rows[0])
        const existing = yield* sql`SELECT 1 FROM workflow_executions WHERE workflow_id = ${workflowId} AND id = ${executionId}`
        return existing.length > 0 ? yield* ExecutionNotActive.of() : undefined
      }, mapSqlError)

      const cancelAll = Effect.fn("Workflows.cancelAll")(function*(workflowId: string) {
        return (yield* cancelWhere({ workflowId })).length
      }, mapSqlError)

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
