/** Building workflows over HTTP in tests: a chain of steps (with branches) from the TRIGGER step. */
import { expect } from "vitest"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

export interface Client {
  readonly url: string
  readonly key: string
}

export const call = (client: Client, method: string, path: string, body?: unknown) =>
  request(client.url, method, path, { key: client.key, body })

export interface StepSpec {
  readonly type: string
  readonly config?: unknown
  /** Where this step goes next: a single key (of `steps`), or per branch / outcome. */
  readonly next?: string | { yes?: string; no?: string } | { EVENT?: string; TIMEOUT?: string }
}

/**
 * Creates an enabled workflow: `first` is the key of the step after the TRIGGER; step ids come back by key.
 */
export const buildWorkflow = async (
  client: Client,
  options: { name: string; eventName?: string; allowReentry?: boolean; enabled?: boolean; first: string; steps: Record<string, StepSpec> }
) => {
  const created = await call(client, "POST", "/workflows", {
    name: options.name,
    eventName: options.eventName,
    allowReentry: options.allowReentry
  })
  expect(created.status, JSON.stringify(created.json)).toBe(201)
  const workflowId = created.json.id as string
  const ids: Record<string, string> = { trigger: created.json.steps[0].id }
  for (const [key, spec] of Object.entries(options.steps)) {
    const step = await call(client, "POST", `/workflows/${workflowId}/steps`, { type: spec.type, name: key, config: spec.config ?? {} })
    expect(step.status, JSON.stringify(step.json)).toBe(201)
    ids[key] = step.json.id
  }
  const connect = async (from: string, to: string, extra: Record<string, unknown> = {}) => {
    const transition = await call(client, "POST", `/workflows/${workflowId}/transitions`, {
      fromStepId: ids[from],
      toStepId: ids[to],
      ...extra
    })
    expect(transition.status, JSON.stringify(transition.json)).toBe(201)
  }
  await connect("trigger", options.first)
  for (const [key, spec] of Object.entries(options.steps)) {
    if (typeof spec.next === "string") await connect(key, spec.next)
    else if (spec.next) {
      for (const [choice, to] of Object.entries(spec.next)) {
        if (!to) continue
        await connect(key, to, choice === "yes" || choice === "no" ? { branch: choice } : { waitOutcome: choice })
      }
    }
  }
  if (options.enabled !== false && options.eventName) {
    expect((await call(client, "PATCH", `/workflows/${workflowId}`, { enabled: true })).status).toBe(200)
  }
  return { workflowId, ids }
}

export const executionsOf = async (client: Client, workflowId: string, status?: string) =>
  (await call(client, "GET", `/workflows/${workflowId}/executions?pageSize=100${status ? `&status=${status}` : ""}`)).json.data as Array<{
    id: string
    status: string
    contactId: string
    currentStepId: string | null
    context: Record<string, unknown>
    exitReason: string | null
    error: string | null
  }>

/** Waits for the workflow's executions to number `count`, all in `status`; answers them with their step history. */
export const settled = (client: Client, workflowId: string, status: string, count = 1, timeoutMs = 15_000) =>
  eventually(async () => {
    if (count > 100) {
      // Beyond one page: compare the totals only.
      const total = async (filter: string) =>
        (await call(client, "GET", `/workflows/${workflowId}/executions?pageSize=1${filter}`)).json.total
      expect([await total(`&status=${status}`), await total("")]).toEqual([count, count])
      return []
    }
    const list = await executionsOf(client, workflowId)
    expect(list.map((execution) => execution.status)).toEqual(Array(count).fill(status))
    return Promise.all(list.map(async (execution) =>
      (await call(client, "GET", `/workflows/${workflowId}/executions/${execution.id}`)).json as typeof execution & {
        steps: Array<{ id: string; stepId: string; stepType: string; status: string; output: any; error: string | null; attempts: number }>
      }
    ))
  }, timeoutMs)
