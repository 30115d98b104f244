/**
 * What the workflow pages know about steps: the types and their labels, a one-line summary of a step's
 * config, which outgoing links a step offers (yes/no for CONDITION, event/timeout for WAIT_FOR_EVENT),
 * and where a step sits in the graph when it has no stored position (layered by its distance from TRIGGER).
 */
import type { ListedExecution, Workflow, WorkflowStep, WorkflowTransition } from "../../../../src/http/api/workflows.ts"

export type WorkflowData = typeof Workflow.Type
export type Step = typeof WorkflowStep.Type
export type Transition = typeof WorkflowTransition.Type
export type ExecutionData = typeof ListedExecution.Type
export type StepType = Step["type"]

/** The types a user adds (TRIGGER comes with the workflow). */
export const ADDABLE_TYPES = [
  "SEND_EMAIL",
  "DELAY",
  "WAIT_FOR_EVENT",
  "CONDITION",
  "WEBHOOK",
  "UPDATE_CONTACT",
  "EXIT"
] as const satisfies ReadonlyArray<StepType>

export const TYPE_LABELS: Record<StepType, string> = {
  TRIGGER: "Trigger",
  SEND_EMAIL: "Send email",
  DELAY: "Delay",
  WAIT_FOR_EVENT: "Wait for event",
  CONDITION: "Condition",
  WEBHOOK: "Webhook",
  UPDATE_CONTACT: "Update contact",
  EXIT: "Exit"
}

/** An outgoing link of a step: its label and what the transition carries. */
export interface Outlet {
  readonly id: string
  readonly label: string
  readonly branch?: "yes" | "no"
  readonly waitOutcome?: "EVENT" | "TIMEOUT"
}

const NEXT: ReadonlyArray<Outlet> = [{ id: "next", label: "Next" }]

export const outletsOf = (type: StepType): ReadonlyArray<Outlet> => {
  switch (type) {
    case "CONDITION":
      return [{ id: "yes", label: "Yes", branch: "yes" }, { id: "no", label: "No", branch: "no" }]
    case "WAIT_FOR_EVENT":
      return [{ id: "EVENT", label: "Event", waitOutcome: "EVENT" }, { id: "TIMEOUT", label: "Timeout", waitOutcome: "TIMEOUT" }]
    case "EXIT":
      return []
    default:
      return NEXT
  }
}

export const outletOf = (transition: Transition): string => transition.branch ?? transition.waitOutcome ?? "next"

export const outletLabel = (transition: Transition): string | undefined =>
  transition.branch === "yes"
    ? "yes"
    : transition.branch === "no"
    ? "no"
    : transition.waitOutcome === "EVENT"
    ? "event"
    : transition.waitOutcome === "TIMEOUT"
    ? "timeout"
    : undefined

const text = (value: unknown) => (typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value))

/** A duration in seconds as words: 90 → "1.5 minutes". */
export const secondsAsWords = (seconds: number): string => {
  const [amount, unit] = seconds % 86_400 === 0
    ? [seconds / 86_400, "day"]
    : seconds % 3_600 === 0
    ? [seconds / 3_600, "hour"]
    : seconds >= 60
    ? [seconds / 60, "minute"]
    : [seconds, "second"]
  return `${Number(amount.toFixed(2))} ${unit}${amount === 1 ? "" : "s"}`
}

/** An amount of a unit stored in the plural ("hours"): "1 hour", "1.5 hours". */
export const amountOf = (amount: unknown, unit: string): string =>
  `${text(amount)} ${amount === 1 && unit.endsWith("s") ? unit.slice(0, -1) : unit}`

/** One line about a step's config, for its node and lists. */
export const summary = (step: Step, templates: ReadonlyMap<string, string>, eventName?: string): string => {
  const config = step.config
  switch (step.type) {
    case "TRIGGER":
      return eventName ? `When ${eventName} is tracked` : "Started by hand"
    case "SEND_EMAIL": {
      const recipient = config.recipient as { type?: string; customEmail?: string } | undefined
      const template = templates.get(text(config.templateId)) ?? "a template"
      return recipient?.type === "CUSTOM" ? `${template} to ${recipient.customEmail}` : template
    }
    case "DELAY":
      return amountOf(config.amount, text(config.unit))
    case "WAIT_FOR_EVENT":
      return typeof config.timeout === "number"
        ? `${text(config.eventName)}, up to ${secondsAsWords(config.timeout)}`
        : text(config.eventName)
    case "CONDITION": {
      if (config.condition !== undefined) {
        const tree = config.condition as { logic?: string; groups?: ReadonlyArray<{ filters?: ReadonlyArray<unknown> }> }
        const filters = (tree.groups ?? []).reduce((sum, group) => sum + (group.filters?.length ?? 0), 0)
        return filters === 1 ? describeFilter(tree.groups?.[0]?.filters?.[0]) : `${filters} filters (${tree.logic ?? "AND"})`
      }
      return describeFilter(config)
    }
    case "WEBHOOK":
      return `${text(config.method ?? "POST")} ${text(config.url)}`
    case "UPDATE_CONTACT": {
      const updates = Object.keys((config.updates ?? config.data ?? {}) as object)
      const action = text(config.subscriptionAction)
      return [updates.length > 0 ? `set ${updates.join(", ")}` : "", action && action !== "none" ? action : ""].filter(Boolean).join(
        "; "
      ) || "No changes"
    }
    case "EXIT":
      return text(config.reason) || "End"
  }
}

const describeFilter = (filter: unknown): string => {
  if (typeof filter !== "object" || filter === null) return ""
  const { field, operator, value, unit } = filter as Record<string, unknown>
  return [text(field), text(operator), value === undefined ? "" : text(value), unit === undefined ? "" : text(unit)].filter(Boolean).join(
    " "
  )
}

export const COLUMN = 260
export const ROW = 140

/**
 * Positions for the steps without a stored one: rows by the longest path from the trigger (the graph has
 * no cycles), columns in order of the outlets that lead there. Steps nothing reaches go in a last row.
 */
export const layout = (workflow: WorkflowData): Map<string, { x: number; y: number }> => {
  const depth = new Map<string, number>()
  const trigger = workflow.steps.find((step) => step.type === "TRIGGER")
  const outgoing = (id: string) => workflow.transitions.filter((transition) => transition.fromStepId === id)
  if (trigger) {
    const visit = (id: string, level: number, seen: ReadonlySet<string>) => {
      if (seen.has(id) || (depth.get(id) ?? -1) >= level) return
      depth.set(id, level)
      const next = new Set(seen).add(id)
      for (const transition of outgoing(id)) visit(transition.toStepId, level + 1, next)
    }
    visit(trigger.id, 0, new Set())
  }
  const last = Math.max(-1, ...depth.values()) + 1
  const rows = new Map<number, Array<Step>>()
  for (const step of workflow.steps) {
    const level = depth.get(step.id) ?? last
    rows.set(level, [...(rows.get(level) ?? []), step])
  }
  const positions = new Map<string, { x: number; y: number }>()
  for (const [level, steps] of rows) {
    steps.forEach((step, index) =>
      positions.set(step.id, step.position ?? { x: (index - (steps.length - 1) / 2) * COLUMN, y: level * ROW })
    )
  }
  return positions
}

export const EXECUTION_STATUSES = ["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"] as const satisfies ReadonlyArray<
  ExecutionData["status"]
>

export const isActive = (status: string) => status === "RUNNING" || status === "WAITING"

export const statusTone = (status: string): "slate" | "green" | "amber" | "red" | "indigo" =>
  status === "COMPLETED"
    ? "green"
    : status === "FAILED"
    ? "red"
    : status === "RUNNING" || status === "WAITING" || status === "SCHEDULED"
    ? "indigo"
    : status === "CANCELLED"
    ? "amber"
    : "slate"
