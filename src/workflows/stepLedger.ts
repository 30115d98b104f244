/**
 * The batch's bookkeeping of executions and their steps, in memory until the engine writes it back:
 * step history (one record per execution and step), claims of side-effect steps, an execution's end or
 * wait (with its timer). Apart from engine.ts, which decides what happens; these only record it.
 */
import { uuidv7 } from "../domain/ids.ts"
import type { ExecutionState, NewTimer, StepRecord } from "../store/WorkflowExecutions.ts"
import type { RunnableStep } from "./decider.ts"
import type { ExecutionStatus } from "./graph.ts"
import type { WorkflowRuntime } from "./Runtime.ts"

export const makeStepLedger = (batch: {
  readonly projectId: string
  readonly repository: WorkflowRuntime["Service"]["executions"]
  readonly steps: Map<string, StepRecord>
  readonly newTimers: Array<NewTimer>
  readonly stamp: () => string
  readonly nowIso: () => string
  readonly awaitIn: (exec: ExecutionState) => void
}) => {
  const { awaitIn, newTimers, nowIso, projectId, repository, stamp, steps } = batch

  const record = (
    exec: ExecutionState,
    step: RunnableStep,
    status: StepRecord["status"],
    output: unknown = null,
    error: string | null = null
  ) => {
    const key = `${exec.id} ${step.id}`
    const existing = steps.get(key)
    const at = stamp()
    const final = status === "COMPLETED" || status === "FAILED" || status === "SKIPPED"
    steps.set(key, {
      id: existing?.id ?? uuidv7(),
      executionId: exec.id,
      stepId: step.id,
      stepType: step.type,
      status,
      output: output ?? existing?.output ?? null,
      error,
      startedAt: existing?.startedAt ?? at,
      finishedAt: final ? at : null
    })
  }

  /** Claims a step's execution key now (side-effect steps): false when it was claimed before. */
  const claim = (exec: ExecutionState, step: RunnableStep, status: "COMPLETED" | "RUNNING", output: unknown) =>
    repository.claimStep({ projectId, executionId: exec.id, stepId: step.id, stepType: step.type, status, output, at: stamp() })

  const finish = (exec: ExecutionState, status: ExecutionStatus, detail: { error?: string; exitReason?: string | null } = {}) => {
    exec.status = status
    exec.waitEvent = null
    exec.timerId = null
    exec.finishedAt = nowIso()
    if (detail.error !== undefined) exec.error = detail.error
    if (detail.exitReason !== undefined) exec.exitReason = detail.exitReason
    exec.dirty = true
  }

  const fail = (exec: ExecutionState, step: RunnableStep, error: string) => {
    record(exec, step, "FAILED", null, error)
    finish(exec, "FAILED", { error: `${step.type} step failed: ${error}` })
  }

  /** Waits on a step: for an event, until a timer, or both. */
  const wait = (exec: ExecutionState, step: RunnableStep, waitEvent: string | null, dueAt: string | null, output: unknown) => {
    exec.status = "WAITING"
    if (waitEvent !== null) exec.waitEvent = waitEvent
    if (dueAt !== null) {
      exec.timerId = uuidv7()
      newTimers.push({ executionId: exec.id, id: exec.timerId, stepId: step.id, dueAt })
    }
    record(exec, step, "WAITING", output)
    if (waitEvent !== null) awaitIn(exec)
  }

  return { record, claim, finish, fail, wait }
}
