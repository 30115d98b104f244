/** What refers to a template, an event name or a contact field among a project's workflows (usage endpoints). */
import type { WorkflowDetail } from "../store/workflowRecords.ts"
import { stepReferences } from "./graph.ts"

/** SEND_EMAIL steps that send the template. */
export const templateUsage = (workflows: ReadonlyArray<WorkflowDetail>, templateId: string) =>
  workflows.flatMap((workflow) =>
    workflow.steps
      .filter((step) => stepReferences(step).templateId === templateId)
      .map((step) => ({ id: workflow.id, name: workflow.name, stepId: step.id }))
  )

/** Workflows triggered by the event, waiting for it, or testing it in a CONDITION. */
export const eventUsage = (workflows: ReadonlyArray<WorkflowDetail>, eventName: string) =>
  workflows
    .filter((workflow) =>
      workflow.triggerConfig.eventName === eventName || workflow.steps.some((step) => stepReferences(step).events.has(eventName))
    )
    .map(({ id, name }) => ({ id, name }))

/** Workflows whose CONDITION steps read the field, or whose UPDATE_CONTACT steps write it. */
export const fieldUsage = (workflows: ReadonlyArray<WorkflowDetail>, field: string) =>
  workflows
    .filter((workflow) =>
      workflow.steps.some((step) => [...stepReferences(step).fields].some((used) => used === field || used.startsWith(`${field}.`)))
    )
    .map(({ id, name }) => ({ id, name }))
