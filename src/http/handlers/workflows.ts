/** Handlers of the workflows group: request rules here, SQL in store/Workflows.ts, graph rules in workflows/graph.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { isUuid } from "../../domain/ids.ts"
import { Contacts } from "../../store/Contacts.ts"
import { ConditionCheck } from "../../store/ConditionCheck.ts"
import type { WorkflowDetail } from "../../store/workflowRecords.ts"
import { Workflows } from "../../store/Workflows.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { conditionFieldList, conditionOf } from "../../workflows/conditionStep.ts"
import { ADDABLE_STEP_TYPES, checkStepConfig } from "../../workflows/stepConfig.ts"
import { checkTransition, EXECUTION_STATUSES, type ExecutionStatus, makeGraph, spliceTarget, type StepType } from "../../workflows/graph.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { type FieldError, rendered } from "../errors.ts"
import { parsePositive } from "../query.ts"
import { NotFound, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Workflow")
const MAX_NAME = 255

const nameProblem = (name: string | undefined): FieldError | undefined =>
  name === undefined
    ? undefined
    : name.trim() === ""
    ? { field: "name", message: "The name is required", code: "too_small" }
    : name.length > MAX_NAME
    ? { field: "name", message: `The name must be at most ${MAX_NAME} characters`, code: "too_big" }
    : undefined

const eventNameProblem = (field: string, name: string | undefined): FieldError | undefined =>
  name === undefined
    ? undefined
    : name.trim() === "" || name.length > 255 || name.includes("\u0000")
    ? { field, message: "eventName must be 1 to 255 characters", code: "invalid_string" }
    : undefined

const failIf = (problems: ReadonlyArray<FieldError | undefined>) => {
  const found = problems.filter((problem) => problem !== undefined)
  return found.length > 0 ? Effect.fail(ValidationFailed.of(found)) : Effect.void
}

export const WorkflowsHandlers = HttpApiBuilder.group(
  Api,
  "workflows",
  Effect.fnUntraced(function*(handlers) {
    const workflows = yield* Workflows
    const conditions = yield* ConditionCheck
    const contacts = yield* Contacts
    const relay = yield* OutboxRelay

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      if (!isUuid(id)) return yield* notFound
      return (yield* workflows.get(project.id, id)) ?? (yield* notFound)
    })

    /**
     * A step's config checked. A SEND_EMAIL template that is not this project's (missing or another
     * project's, alike) is the store's 404 TemplateNotFound, as the reference answers it.
     */
    const validConfig = Effect.fnUntraced(function*(projectId: string, type: StepType, config: unknown) {
      const checked = checkStepConfig(type, config)
      if (checked.problems.length > 0) return yield* ValidationFailed.of(checked.problems)
      if (type === "CONDITION") {
        const path = "condition" in checked.config ? "config.condition" : "config"
        const references = yield* conditions.references(projectId, conditionOf(checked.config), path)
        if (references._tag === "invalid") {
          return yield* ValidationFailed.of(
            references.problems.map((p) => ({
              field: p.path,
              message: p.message,
              code: p.code,
              ...(p.received ? { received: p.received } : {})
            }))
          )
        }
      }
      return checked.config
    })

    /** Runs a structural edit (WorkflowHasActiveExecutions, a 409, while executions are active), then wakes the relay. */
    const structural = <A, E>(workflow: WorkflowDetail, edit: Effect.Effect<A, E>) =>
      Effect.tap(workflows.structural(workflow.projectId, workflow.id, edit), () => relay.wake)

    return handlers
      .handle("list", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return yield* workflows.list(project.id)
        })))
      .handle("fields", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const [fields, events] = yield* Effect.all([contacts.fields(project.id), workflows.eventFields(project.id)], { concurrency: 2 })
          const contactFields = fields.map(({ field, type }) => ({ field, type }))
          const contextKeys = [...new Set(events.flatMap((event) => event.dataKeys))].sort()
          // Also in the reference's shape and names (contact.<field>, event.<key>), which its clients read.
          const typedFields = conditionFieldList(contactFields, contextKeys)
          return {
            contactFields,
            events,
            contextFields: contextKeys.map((key) => `context.${key}`),
            fields: typedFields.map(({ field }) => field),
            typedFields,
            count: typedFields.length
          }
        })))
      .handle("webhookSecret", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return { secret: yield* workflows.webhookSecret(project.id) }
        })))
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          yield* failIf([
            nameProblem(payload.name),
            eventNameProblem("eventName", payload.eventName),
            payload.description && payload.description.length > 2000
              ? { field: "description", message: "The description must be at most 2000 characters", code: "too_big" }
              : undefined
          ])
          const created = yield* workflows.create(project.id, {
            name: payload.name.trim(),
            description: payload.description ?? null,
            eventName: payload.eventName?.trim() ?? null,
            allowReentry: payload.allowReentry ?? false
          })
          yield* relay.wake
          return created
        })))
      .handle("get", ({ params }) => rendered(find(params.id)))
      .handle("update", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const workflow = yield* find(params.id)
          const eventName = payload.triggerConfig?.eventName?.trim()
          yield* failIf([nameProblem(payload.name), eventNameProblem("triggerConfig.eventName", eventName)])
          const triggerType = payload.triggerType ?? workflow.triggerType
          const enabled = payload.enabled ?? workflow.enabled
          if (enabled && triggerType === "EVENT" && !(eventName ?? workflow.triggerConfig.eventName)) {
            return yield* ValidationFailed.field(
              "triggerConfig.eventName",
              "An EVENT workflow needs an eventName to be enabled",
              "required"
            )
          }
          const updated = yield* workflows.update(project.id, workflow.id, {
            name: payload.name?.trim(),
            description: payload.description,
            triggerType: payload.triggerType,
            eventName,
            enabled: payload.enabled,
            allowReentry: payload.allowReentry
          })
          yield* relay.wake
          return updated ?? (yield* notFound)
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const workflow = yield* find(params.id)
          if (!(yield* workflows.remove(project.id, workflow.id))) return yield* notFound
          yield* relay.wake
          return { success: true as const }
        })))
      .handle("addStep", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const workflow = yield* find(params.id)
          const type = ADDABLE_STEP_TYPES.find((known) => known === payload.type)
          if (!type) {
            return yield* ValidationFailed.field(
              "type",
              `type must be one of ${ADDABLE_STEP_TYPES.join(", ")}`,
              "invalid_value",
              payload.type
            )
          }
          yield* failIf([nameProblem(payload.name)])
          if (type === "WAIT_FOR_EVENT") {
            const config = payload.config as Record<string, unknown> | undefined
            yield* failIf([eventNameProblem("config.eventName", typeof config?.eventName === "string" ? config.eventName : undefined)])
          }
          const config = yield* validConfig(project.id, type, payload.config)
          return yield* structural(
            workflow,
            workflows.insertStep(project.id, workflow.id, {
              type,
              name: payload.name?.trim() || type,
              config,
              position: payload.position
            })
          )
        })))
      .handle("updateStep", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const workflow = yield* find(params.id)
          const step = workflow.steps.find((candidate) => candidate.id === params.stepId) ?? (yield* NotFound.of("Step"))
          yield* failIf([nameProblem(payload.name)])
          if (step.type === "TRIGGER" && payload.config !== undefined) {
            return yield* ValidationFailed.field(
              "config",
              "The TRIGGER step follows the workflow's trigger: PATCH /workflows/:id with triggerConfig",
              "invalid_value"
            )
          }
          const config = payload.config === undefined ? undefined : yield* validConfig(project.id, step.type, payload.config)
          const updated = yield* workflows.updateStep(project.id, workflow.id, step.id, {
            name: payload.name?.trim(),
            config,
            position: payload.position
          })
          yield* relay.wake
          return updated ?? (yield* NotFound.of("Step"))
        })))
      .handle("deleteStep", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          const step = workflow.steps.find((candidate) => candidate.id === params.stepId) ?? (yield* NotFound.of("Step"))
          if (step.type === "TRIGGER") return yield* ValidationFailed.field("stepId", "The TRIGGER step cannot be deleted", "invalid_value")
          let spliceTo: string | undefined
          if (query.splice === "true") {
            const target = spliceTarget(makeGraph(workflow.steps, workflow.transitions), step.id)
            if ("problem" in target) return yield* ValidationFailed.field("splice", target.problem, "cannot_splice")
            spliceTo = target.target
          }
          yield* structural(workflow, workflows.deleteStep(workflow.id, step.id, spliceTo))
          return { success: true as const }
        })))
      .handle("addTransition", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          const problems = checkTransition(makeGraph(workflow.steps, workflow.transitions), payload)
          if (problems.length > 0) return yield* ValidationFailed.of(problems)
          return yield* structural(
            workflow,
            workflows.insertTransition(workflow.id, {
              fromStepId: payload.fromStepId,
              toStepId: payload.toStepId,
              branch: payload.branch ?? null,
              waitOutcome: payload.waitOutcome ?? null
            })
          )
        })))
      .handle("deleteTransition", ({ params }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          if (!workflow.transitions.some((transition) => transition.id === params.transitionId)) {
            return yield* NotFound.of("Transition")
          }
          yield* structural(workflow, workflows.deleteTransition(workflow.id, params.transitionId))
          return { success: true as const }
        })))
      .handle("startExecution", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const workflow = yield* find(params.id)
          if (!isUuid(payload.contactId) || !(yield* contacts.get(project.id, payload.contactId))) {
            return yield* ValidationFailed.field("contactId", "No such contact in this project", "unknown_contact", payload.contactId)
          }
          if (payload.context && Buffer.byteLength(JSON.stringify(payload.context)) > 64 * 1024) {
            return yield* ValidationFailed.field("context", "context is at most 64 KiB of JSON", "too_big")
          }
          const started = yield* workflows.startExecution(workflow, payload.contactId, payload.context ?? {})
          yield* relay.wake
          return started
        })))
      .handle("listExecutions", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          let status: ExecutionStatus | undefined
          if (query.status !== undefined && query.status !== "") {
            status = EXECUTION_STATUSES.find((known) => known === query.status!.toUpperCase())
            if (!status)
              return yield* ValidationFailed.field(
                "status",
                `status must be one of ${EXECUTION_STATUSES.join(", ")}`,
                "invalid_value",
                query.status
              )
          }
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const { data, total } = yield* workflows.listExecutions(workflow.id, status, page, pageSize)
          return { data, page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
        })))
      .handle("getExecution", ({ params }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          if (!isUuid(params.executionId)) return yield* NotFound.of("Execution")
          return (yield* workflows.getExecution(workflow.id, params.executionId)) ?? (yield* NotFound.of("Execution"))
        })))
      .handle("cancelExecution", ({ params }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          if (!isUuid(params.executionId)) return yield* NotFound.of("Execution")
          return (yield* workflows.cancel(workflow.id, params.executionId)) ?? (yield* NotFound.of("Execution"))
        })))
      .handle("cancelAll", ({ params }) =>
        rendered(Effect.gen(function*() {
          const workflow = yield* find(params.id)
          return { cancelled: yield* workflows.cancelAll(workflow.id) }
        })))
  })
)
