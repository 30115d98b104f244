/** Messages of kind `workflow` in stream IN: what makes the project's actor touch its workflows. */

export interface DueTimer {
  readonly executionId: string
  readonly stepId: string
  readonly timerId: string
  readonly dueAt: string
}

export type WorkflowMessage =
  /** A workflow was created, edited or deleted: reload the cached definitions. */
  | { readonly kind: "workflow"; readonly projectId: string; readonly type: "changed" }
  /** POST /workflows/:id/executions recorded an execution: run it from its TRIGGER step. */
  | { readonly kind: "workflow"; readonly projectId: string; readonly type: "advance"; readonly executionId: string }
  /** DELAY steps and WAIT_FOR_EVENT timeouts came due. */
  | { readonly kind: "workflow"; readonly projectId: string; readonly type: "timers"; readonly timers: ReadonlyArray<DueTimer> }
  /** A WEBHOOK step's request succeeded (ok) or failed for good. */
  | {
    readonly kind: "workflow"
    readonly projectId: string
    readonly type: "webhookDone"
    readonly executionId: string
    readonly stepId: string
    readonly ok: boolean
    readonly error?: string | undefined
  }
