/**
 * The project's workflow definitions as the engine runs them (graphs of decoded steps, the triggers by
 * event name, the events some step awaits), loaded per actor on first need and again on every change.
 */
import { Effect, Result } from "effect"
import { toStep, toTransition, toWorkflow, type Workflow } from "../store/workflowRecords.ts"
import { type RunnableStep, runnableStep } from "./decider.ts"
import { canonicalEventName, type Graph, makeGraph } from "./graph.ts"
import type { WorkflowRuntime } from "./Runtime.ts"

export interface Def {
  readonly workflow: Workflow
  readonly graph: Graph<RunnableStep>
}

export interface ProjectWorkflows {
  readonly byId: ReadonlyMap<string, Def>
  /** Enabled EVENT workflows by trigger event name. */
  readonly triggers: ReadonlyMap<string, ReadonlyArray<Def>>
  /** Event names some WAIT_FOR_EVENT step awaits. */
  readonly awaited: ReadonlySet<string>
}

/** Per actor: the project's workflow definitions, loaded on first need and on every change. */
export interface WorkflowState {
  defs: ProjectWorkflows | undefined
}

export const newWorkflowState = (): WorkflowState => ({ defs: undefined })

/** The project's workflows as the engine runs them: graphs of decoded steps, triggers, awaited events. */
export const loadWorkflows = Effect.fnUntraced(function*(runtime: WorkflowRuntime["Service"], projectId: string) {
  const rows = yield* runtime.executions.definitions(projectId)
  const byId = new Map<string, Def>()
  const triggers = new Map<string, Array<Def>>()
  const awaited = new Set<string>()
  for (const row of rows.workflows) {
    const workflow = toWorkflow(row)
    const graph = makeGraph(
      rows.steps.filter((step) => step.workflow_id === row.id).map((step) => runnableStep(toStep(step))),
      rows.transitions.filter((transition) => transition.workflow_id === row.id).map(toTransition)
    )
    const def = { workflow, graph }
    byId.set(workflow.id, def)
    const eventName = workflow.triggerConfig.eventName && canonicalEventName(workflow.triggerConfig.eventName)
    if (workflow.enabled && workflow.triggerType === "EVENT" && eventName) {
      triggers.set(eventName, [...(triggers.get(eventName) ?? []), def])
    }
    for (const step of graph.steps.values()) {
      const definition = step.definition
      if (Result.isSuccess(definition) && definition.success.type === "WAIT_FOR_EVENT") {
        awaited.add(canonicalEventName(definition.success.config.eventName))
      }
    }
  }
  return { byId, triggers, awaited } satisfies ProjectWorkflows
})
