/**
 * The workflow engine, run by the project's actor inside its batch transaction (applyBatch): it starts
 * executions from trigger events, resumes waiting ones (an awaited event, a due timer, a webhook's
 * outcome) and advances each one step by step until it waits, ends or fails. Nothing here runs in an
 * HTTP request.
 *
 * - Executions touched by the batch are locked (FOR UPDATE), changed in memory, and written back in a
 *   few set-wise statements at the end (executions, step history, timers, queued mail).
 * - A step's execution key is (execution, step): graphs have no cycles, so each step runs at most once
 *   per execution. Steps with side effects claim their key before anything is done (INSERT … ON
 *   CONFLICT DO NOTHING), so they are never performed twice, whatever is replayed.
 * - SEND_EMAIL renders and queues the mail in this transaction (the sender delivers it, see
 *   src/mail/Sender.ts); WEBHOOK records its intent (step RUNNING) and the webhook runner performs it
 *   after the commit (src/workflows/webhooks.ts), reporting back through the partition.
 * - DELAY and WAIT_FOR_EVENT timeouts are rows of `workflow_timers`; due ones come back as `timers`
 *   messages (src/workflows/timers.ts). A timer whose id is not the execution's current one (the
 *   execution was cancelled, or resumed by its event) is ignored.
 * - Billing caps: SEND_EMAIL takes one email of the month's `workflows` cap (the room is read and locked
 *   once per batch, on the first send, and counted down in memory since the batch's mail is inserted at
 *   its end). At the cap the execution waits on the step (WAITING, the step's history says why) with a
 *   timer at the month's turn, and the workflow records the hold (`billing_hold`); the timer retries
 *   the step, not the next one. src/billing/heldMail.ts brings those timers forward when the cap is
 *   raised or room frees up.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { toDataPatch } from "../domain/customData.ts"
import { compileCondition, type ContactFacts } from "../domain/conditions/evaluate.ts"
import { conditionReads } from "../domain/conditions/validate.ts"
import { uuidv7 } from "../domain/ids.ts"
import { normalizeEmail } from "../domain/email.ts"
import { loadFacts } from "../actors/segments.ts"
import { pgArray } from "../lib/pgArray.ts"
import { prepareEmail } from "../mail/prepare.ts"
import { makeRenderer, type CompiledTemplate } from "../mail/render.ts"
import { holdReason, monthTurn } from "../store/Billing.ts"
import { ContactDataTooLarge } from "../store/Contacts.ts"
import type { NewEmail } from "../store/Emails.ts"
import type { Template } from "../store/Templates.ts"
import { type ExecutionRow, toStep, toTransition, toWorkflow, type Workflow } from "../store/Workflows.ts"
import { canonicalEventName, conditionOf, CONTEXT_DATA_KEY, DELAY_UNITS, type ExecutionStatus, type Graph, makeGraph, nextStep, type Step } from "./graph.ts"
import type { WorkflowMessage } from "./messages.ts"
import { WorkflowMetrics } from "./metrics.ts"
import type { WorkflowRuntime } from "./Runtime.ts"

interface Def {
  readonly workflow: Workflow
  readonly graph: Graph
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

/** An event of the batch (tracked or emitted), as the engine sees it. */
export interface BatchEvent {
  readonly kind: "event"
  readonly id: string
  readonly contactId: string
  readonly name: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
}

/** A contact was deleted: its active executions are cancelled. */
export interface ContactDeleted {
  readonly kind: "contactDeleted"
  readonly contactId: string
}

export type WorkflowInput = BatchEvent | WorkflowMessage | ContactDeleted

export interface WorkflowContext {
  readonly projectId: string
  /** The partition of a contact's lane, where its executions, steps and timers are worked on. */
  readonly partitionOf: (contactId: string) => number
  readonly runtime: WorkflowRuntime["Service"]
  readonly state: WorkflowState
}

export interface WorkflowOutcome {
  readonly mailQueued: boolean
  readonly webhooksQueued: boolean
  /** Executions advanced (started, resumed) in this batch. */
  readonly advanced: number
  /** DELAY / WAIT_FOR_EVENT timers were set. */
  readonly timersSet?: boolean
}

const NOTHING: WorkflowOutcome = { mailQueued: false, webhooksQueued: false, advanced: 0, timersSet: false }

export const loadWorkflows = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const workflows = yield* sql<Parameters<typeof toWorkflow>[0]>`SELECT * FROM workflows WHERE project_id = ${projectId}`
  const ids = workflows.map((row) => row.id)
  const [steps, transitions] = ids.length === 0 ? [[], []] : yield* Effect.all([
    sql<Parameters<typeof toStep>[0]>`SELECT * FROM workflow_steps WHERE workflow_id IN ${sql.in(ids)}`,
    sql<Parameters<typeof toTransition>[0]>`SELECT * FROM workflow_transitions WHERE workflow_id IN ${sql.in(ids)}`
  ])
  const byId = new Map<string, Def>()
  const triggers = new Map<string, Array<Def>>()
  const awaited = new Set<string>()
  for (const row of workflows) {
    const workflow = toWorkflow(row)
    const graph = makeGraph(
      steps.filter((step) => step.workflow_id === row.id).map(toStep),
      transitions.filter((transition) => transition.workflow_id === row.id).map(toTransition)
    )
    const def = { workflow, graph }
    byId.set(workflow.id, def)
    const eventName = workflow.triggerConfig.eventName && canonicalEventName(workflow.triggerConfig.eventName)
    if (workflow.enabled && workflow.triggerType === "EVENT" && eventName) {
      triggers.set(eventName, [...(triggers.get(eventName) ?? []), def])
    }
    for (const step of graph.steps.values()) {
      if (step.type === "WAIT_FOR_EVENT" && typeof step.config.eventName === "string") awaited.add(canonicalEventName(step.config.eventName))
    }
  }
  return { byId, triggers, awaited } satisfies ProjectWorkflows
})

interface ExecState {
  readonly id: string
  readonly workflowId: string
  readonly contactId: string
  status: ExecutionStatus
  currentStepId: string | null
  context: Record<string, unknown>
  waitEvent: string | null
  timerId: string | null
  exitReason: string | null
  error: string | null
  readonly startedAt: string
  finishedAt: string | null
  dirty: boolean
}

const toState = (row: ExecutionRow): ExecState => ({
  id: row.id,
  workflowId: row.workflow_id,
  contactId: row.contact_id,
  status: row.status,
  currentStepId: row.current_step_id,
  context: typeof row.context === "string" ? JSON.parse(row.context) : row.context,
  waitEvent: row.wait_event,
  timerId: row.timer_id,
  exitReason: row.exit_reason,
  error: row.error,
  startedAt: new Date(row.started_at).toISOString(),
  finishedAt: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  dirty: false
})

interface StepRecord {
  id: string
  executionId: string
  stepId: string
  stepType: string
  status: "WAITING" | "RUNNING" | "COMPLETED" | "FAILED" | "SKIPPED"
  output: unknown
  error: string | null
  startedAt: string
  finishedAt: string | null
}

const renderer = makeRenderer()

/**
 * Applies the batch's workflow inputs, in order. `inputs` holds the batch's events and workflow
 * messages as they came; the caller adds the returned flags to its outcome.
 */
export const runWorkflows = Effect.fnUntraced(function*(context: WorkflowContext, inputs: ReadonlyArray<WorkflowInput>) {
  if (inputs.length === 0) return NOTHING
  const sql = yield* SqlClient.SqlClient
  const clock = yield* Clock.Clock
  const { projectId, runtime, state } = context
  if (state.defs === undefined || inputs.some((input) => input.kind === "workflow" && input.type === "changed")) {
    state.defs = yield* loadWorkflows(projectId)
  }
  const defs = state.defs
  const relevant = inputs.filter((input) =>
    input.kind === "workflow"
      ? input.type !== "changed"
      : input.kind === "event"
      ? defs.triggers.has(input.name) || defs.awaited.has(input.name)
      : defs.byId.size > 0
  )
  if (relevant.length === 0) return NOTHING

  const nowIso = () => new Date(clock.currentTimeMillisUnsafe()).toISOString()
  // Step history is ordered by start time: within the batch, microseconds keep the steps' order.
  let sequence = 0
  const stamp = () => `${nowIso().slice(0, 23)}${String(sequence++ % 1000).padStart(3, "0")}Z`
  const outcome = { mailQueued: false, webhooksQueued: false, advanced: 0, timersSet: false }

  // ---- load and lock what the inputs touch ----
  const executions = new Map<string, ExecState>()
  const byIds = new Set<string>()
  for (const input of relevant) {
    if (input.kind !== "workflow") continue
    if (input.type === "advance" || input.type === "webhookDone") byIds.add(input.executionId)
    if (input.type === "timers") for (const timer of input.timers) byIds.add(timer.executionId)
  }
  if (byIds.size > 0) {
    const rows = yield* sql<ExecutionRow>`
      SELECT * FROM workflow_executions WHERE id = ANY(${pgArray([...byIds])}::uuid[]) AND project_id = ${projectId}
      ORDER BY id FOR UPDATE`
    for (const row of rows) executions.set(row.id, toState(row))
  }
  /** Executions waiting for an event, by contact. */
  const waiting = new Map<string, Array<ExecState>>()
  const awaitIn = (exec: ExecState) => {
    const list = waiting.get(exec.contactId) ?? []
    list.push(exec)
    waiting.set(exec.contactId, list)
  }
  const awaitedEvents = relevant.filter((input): input is BatchEvent => input.kind === "event" && defs.awaited.has(input.name))
  if (awaitedEvents.length > 0) {
    const rows = yield* sql<ExecutionRow>`
      SELECT * FROM workflow_executions
      WHERE project_id = ${projectId} AND status = 'WAITING'
        AND wait_event = ANY(${pgArray([...new Set(awaitedEvents.map((event) => event.name))])}::text[])
        AND contact_id = ANY(${pgArray([...new Set(awaitedEvents.map((event) => event.contactId))])}::uuid[])
      ORDER BY id FOR UPDATE`
    for (const row of rows) {
      const exec = executions.get(row.id) ?? toState(row)
      executions.set(exec.id, exec)
      awaitIn(exec)
    }
  }

  // ---- what the batch writes at the end ----
  const steps = new Map<string, StepRecord>()
  const newTimers: Array<{ executionId: string; id: string; stepId: string; dueAt: string }> = []
  const clearedTimers = new Set<string>()
  const emails: Array<NewEmail> = []

  // Per-batch caches of what steps read.
  const templates = new Map<string, { template: Template; subject: CompiledTemplate; body: CompiledTemplate } | undefined>()
  const facts = new Map<string, ContactFacts | undefined>()
  let settings: { linkSecret: string; trackingEnabled: boolean } | undefined
  /** What the month's `workflows` cap still allows in this batch: read (and locked) on the first send; null = no cap. */
  let capRoom: { limit: number; remaining: number } | null | undefined
  /** Workflows whose mail this batch held at the cap (with why), and those that queued mail under a cap. */
  const heldWorkflows = new Map<string, string>()
  const sentUnderCap = new Set<string>()

  const factsOf = Effect.fnUntraced(function*(contactId: string, events: ReadonlySet<string> = new Set()) {
    const cached = facts.get(contactId)
    if (cached && [...events].every((name) => cached.events.has(name))) return cached
    const loaded = (yield* loadFacts(projectId, [contactId], events, new Set(events))).get(contactId)
    facts.set(contactId, loaded)
    return loaded
  })

  const templateOf = Effect.fnUntraced(function*(id: string) {
    if (templates.has(id)) return templates.get(id)
    const template = yield* runtime.templates.get(projectId, id)
    const compiled = template
      ? yield* Effect.try(() => ({ template, subject: renderer.compile(template.subject, "text"), body: renderer.compile(template.body, "html") }))
        .pipe(Effect.orElseSucceed(() => undefined))
      : undefined
    templates.set(id, compiled)
    return compiled
  })

  const record = (exec: ExecState, step: Step, status: StepRecord["status"], output: unknown = null, error: string | null = null) => {
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

  /**
   * Claims a step's execution key now (side-effect steps): false when it was claimed before. A step
   * waiting at a billing cap (WAITING) is claimed by its retry.
   */
  const claim = Effect.fnUntraced(function*(exec: ExecState, step: Step, status: "COMPLETED" | "RUNNING", output: unknown) {
    const at = stamp()
    const rows = yield* sql`
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, output,
                                            next_attempt_at, started_at, finished_at)
      VALUES (${uuidv7()}, ${exec.id}, ${step.id}, ${step.type}, ${projectId},
              (SELECT partition FROM workflow_executions WHERE id = ${exec.id}), ${status},
              ${JSON.stringify(output)}::jsonb, ${status === "RUNNING" ? sql`now()` : null}, ${at}::timestamptz,
              ${status === "COMPLETED" ? at : null}::timestamptz)
      ON CONFLICT (execution_id, step_id) DO UPDATE SET
        status = EXCLUDED.status, output = EXCLUDED.output, next_attempt_at = EXCLUDED.next_attempt_at,
        error = NULL, finished_at = EXCLUDED.finished_at
      WHERE workflow_step_executions.status = 'WAITING'
      RETURNING id`
    return rows.length > 0
  })

  const finish = (exec: ExecState, status: ExecutionStatus, detail: { error?: string; exitReason?: string | null } = {}) => {
    exec.status = status
    exec.waitEvent = null
    exec.timerId = null
    exec.finishedAt = nowIso()
    if (detail.error !== undefined) exec.error = detail.error
    if (detail.exitReason !== undefined) exec.exitReason = detail.exitReason
    exec.dirty = true
  }

  const fail = (exec: ExecState, step: Step, error: string) => {
    record(exec, step, "FAILED", null, error)
    finish(exec, "FAILED", { error: `${step.type} step failed: ${error}` })
  }

  /** Parks an execution on its SEND_EMAIL step at the month's cap: it retries the step at the month's turn (or when resumed). */
  const holdAtCap = (exec: ExecState, def: Def, step: Step, limit: number) => {
    const reason = holdReason("workflows", limit)
    const retryAt = monthTurn(new Date(clock.currentTimeMillisUnsafe())).toISOString()
    exec.status = "WAITING"
    exec.timerId = uuidv7()
    newTimers.push({ executionId: exec.id, id: exec.timerId, stepId: step.id, dueAt: retryAt })
    record(exec, step, "WAITING", { billingHold: reason, retryAt })
    heldWorkflows.set(def.workflow.id, reason)
  }

  /** Queues a SEND_EMAIL step's mail; false when the step failed (recorded) or waits at the billing cap. */
  const sendEmail = Effect.fnUntraced(function*(exec: ExecState, def: Def, step: Step) {
    const compiled = yield* templateOf(String(step.config.templateId))
    if (!compiled) return fail(exec, step, "the template no longer exists (or no longer parses)"), false
    const contact = yield* factsOf(exec.contactId)
    if (!contact) return fail(exec, step, "the contact no longer exists"), false
    if (capRoom === undefined) {
      const room = yield* runtime.billing.allowance(projectId, "workflows")
      capRoom = room && { ...room }
    }
    if (capRoom !== null && capRoom.remaining === 0) return holdAtCap(exec, def, step, capRoom.limit), false
    settings ??= yield* runtime.projects.mailSettings(projectId)
    const recipient = step.config.recipient as { type?: string; customEmail?: string } | undefined
    const custom = recipient?.type === "CUSTOM" && typeof recipient.customEmail === "string"
    const { template } = compiled
    const prepared = yield* Effect.tryPromise({ try: () =>
      prepareEmail(
        { projectId, linkSecret: settings!.linkSecret, trackingEnabled: settings!.trackingEnabled, publicUrl: runtime.publicUrl },
        {
          subject: compiled.subject,
          body: compiled.body,
          from: template.from,
          fromName: template.fromName,
          replyTo: template.replyTo,
          headers: {},
          attachments: [],
          // Workflow mail is marketing (not sent to unsubscribed contacts, one-click unsubscribe) unless
          // its template is TRANSACTIONAL; a CUSTOM recipient is not the contact, so it is not marketing
          // to them either (and must not carry the contact's unsubscribe link in its headers).
          type: template.type === "TRANSACTIONAL" || custom ? "TRANSACTIONAL" : "MARKETING",
          templateId: template.id,
          workflowId: def.workflow.id
        },
        { contactId: contact.id, email: contact.email, name: null, data: contact.data },
        { ...exec.context, event: exec.context }
      ), catch: (error) => error instanceof Error ? error.message : String(error) }
    ).pipe(Effect.map((email) => ({ email })), Effect.catch((error) => Effect.succeed({ error })))
    if ("error" in prepared) return fail(exec, step, prepared.error), false
    const email: NewEmail = custom
      ? { ...prepared.email, to: normalizeEmail(recipient!.customEmail!), contactId: null }
      : prepared.email
    if (!(yield* claim(exec, step, "COMPLETED", { emailId: email.id, to: email.to }))) return false
    if (capRoom !== null) {
      capRoom.remaining--
      sentUnderCap.add(def.workflow.id)
    }
    emails.push(email)
    outcome.mailQueued = true
    return true
  })

  /**
   * Advances an execution from `from` (already done) along `choice`, step by step, until it waits,
   * ends or fails; with `again`, `from` is not done (a send held at the billing cap) and runs first.
   */
  const advance = Effect.fnUntraced(function*(
    exec: ExecState,
    from: Step,
    choice: { branch?: "yes" | "no"; waitOutcome?: "EVENT" | "TIMEOUT" } = {},
    again = false
  ) {
    const def = defs.byId.get(exec.workflowId)
    exec.dirty = true
    exec.status = "RUNNING"
    outcome.advanced++
    if (!def) return finish(exec, "FAILED", { error: "the workflow no longer exists" })
    let step = again ? from : nextStep(def.graph, from.id, choice)
    while (exec.status === "RUNNING") {
      if (!step) return finish(exec, "COMPLETED")
      exec.currentStepId = step.id
      const current: Step = step
      switch (current.type) {
        case "TRIGGER":
          return fail(exec, current, "a transition leads back into the trigger")
        case "SEND_EMAIL":
          if (!(yield* sendEmail(exec, def, current))) return
          step = nextStep(def.graph, current.id)
          break
        case "DELAY": {
          const amount = Number(current.config.amount)
          const unit = DELAY_UNITS[current.config.unit as keyof typeof DELAY_UNITS] ?? DELAY_UNITS.minutes
          const dueAt = new Date(clock.currentTimeMillisUnsafe() + amount * unit).toISOString()
          exec.status = "WAITING"
          exec.timerId = uuidv7()
          newTimers.push({ executionId: exec.id, id: exec.timerId, stepId: current.id, dueAt })
          record(exec, current, "WAITING", { dueAt })
          return
        }
        case "WAIT_FOR_EVENT": {
          exec.status = "WAITING"
          exec.waitEvent = canonicalEventName(String(current.config.eventName))
          const timeout = current.config.timeout
          let dueAt: string | null = null
          if (typeof timeout === "number" && timeout > 0) {
            exec.timerId = uuidv7()
            dueAt = new Date(clock.currentTimeMillisUnsafe() + timeout * 1000).toISOString()
            newTimers.push({ executionId: exec.id, id: exec.timerId, stepId: current.id, dueAt })
          }
          record(exec, current, "WAITING", { eventName: exec.waitEvent, timeoutAt: dueAt })
          awaitIn(exec)
          return
        }
        case "CONDITION": {
          const condition = conditionOf(current.config)
          const contact = yield* factsOf(exec.contactId, conditionReads(condition).events)
          if (!contact) return fail(exec, current, "the contact no longer exists")
          const withContext: ContactFacts = { ...contact, data: { ...contact.data, [CONTEXT_DATA_KEY]: exec.context } }
          const matches = compileCondition(condition)(withContext, clock.currentTimeMillisUnsafe()).matches
          const branch = matches ? "yes" : "no"
          record(exec, current, "COMPLETED", { branch })
          step = nextStep(def.graph, current.id, { branch })
          break
        }
        case "WEBHOOK":
          // The intent, recorded now; the runner performs it after the commit and reports back.
          if (yield* claim(exec, current, "RUNNING", null)) outcome.webhooksQueued = true
          return
        case "UPDATE_CONTACT": {
          const updates = (current.config.updates ?? current.config.data ?? {}) as Record<string, unknown>
          const action = current.config.subscriptionAction
          const updated = yield* runtime.contacts.update(projectId, exec.contactId, {
            subscribed: action === "subscribe" ? true : action === "unsubscribe" ? false : undefined,
            patch: toDataPatch(updates),
            source: "workflow"
          }).pipe(Effect.catchTag("ContactDataTooLarge", (error) => Effect.succeed(error)))
          if (updated instanceof ContactDataTooLarge) {
            return fail(exec, current, `the update would grow the contact's data past ${updated.limitBytes / 1024} KiB`)
          }
          if (!updated || !("id" in updated)) return fail(exec, current, "the contact no longer exists")
          facts.delete(exec.contactId)
          record(exec, current, "COMPLETED", { updated: Object.keys(updates), subscribed: updated.subscribed })
          step = nextStep(def.graph, current.id)
          break
        }
        case "EXIT": {
          const reason = typeof current.config.reason === "string" ? current.config.reason : null
          record(exec, current, "COMPLETED", { reason })
          return finish(exec, "EXITED", { exitReason: reason })
        }
      }
    }
  })

  /** The step an execution is on, when it is still part of its workflow. */
  const currentStep = (exec: ExecState) => {
    const def = defs.byId.get(exec.workflowId)
    return exec.currentStepId === null ? undefined : def?.graph.steps.get(exec.currentStepId)
  }

  // ---- the inputs, in order ----
  for (const input of relevant) {
    if (input.kind === "contactDeleted") {
      const loaded = [...executions.values()].filter((exec) => exec.contactId === input.contactId)
      for (const exec of loaded) {
        if (exec.status !== "RUNNING" && exec.status !== "WAITING") continue
        if (exec.timerId !== null) clearedTimers.add(exec.id)
        finish(exec, "CANCELLED", { error: "the contact was deleted" })
      }
      const others = yield* sql<{ id: string }>`
        UPDATE workflow_executions SET status = 'CANCELLED', error = 'the contact was deleted', wait_event = NULL,
               timer_id = NULL, updated_at = now(), finished_at = now()
        WHERE project_id = ${projectId} AND contact_id = ${input.contactId} AND status IN ('RUNNING', 'WAITING')
          AND NOT (id = ANY(${pgArray(loaded.map((exec) => exec.id))}::uuid[]))
        RETURNING id`
      for (const row of others) clearedTimers.add(row.id)
      const ids = [...loaded.map((exec) => exec.id), ...others.map((row) => row.id)]
      // The step each was on ends with it (as on a cancel through the api).
      for (const record of steps.values()) {
        if (ids.includes(record.executionId) && record.status === "WAITING") Object.assign(record, { status: "SKIPPED", error: "the contact was deleted", finishedAt: nowIso() })
      }
      if (ids.length > 0) {
        yield* sql`UPDATE workflow_step_executions SET status = 'SKIPPED', error = 'the contact was deleted', finished_at = now()
                   WHERE execution_id = ANY(${pgArray(ids)}::uuid[]) AND status IN ('WAITING', 'SCHEDULED', 'PENDING')`
      }
      continue
    }
    if (input.kind === "event") {
      // An awaited event resumes the contact's executions waiting for it (EVENT branch).
      const list = waiting.get(input.contactId)
      if (list && defs.awaited.has(input.name)) {
        for (const exec of list.filter((candidate) => candidate.status === "WAITING" && candidate.waitEvent === input.name)) {
          const step = currentStep(exec)
          if (!step) {
            finish(exec, "FAILED", { error: "the step it waited on no longer exists" })
            continue
          }
          if (exec.timerId !== null) clearedTimers.add(exec.id)
          exec.waitEvent = null
          exec.timerId = null
          exec.context = { ...exec.context, ...input.data }
          record(exec, step, "COMPLETED", { outcome: "EVENT", eventId: input.id })
          yield* advance(exec, step, { waitOutcome: "EVENT" })
        }
        waiting.set(input.contactId, list.filter((candidate) => candidate.status === "WAITING"))
      }
      // A trigger event starts an execution per enabled workflow, unless one is active for the contact
      // or (without allowReentry) one ever ran; the source event id makes a second start impossible.
      for (const def of defs.triggers.get(input.name) ?? []) {
        const trigger = def.graph.trigger
        if (!trigger) continue
        const id = uuidv7()
        const started = yield* sql<ExecutionRow>`
          INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context,
                                           source_event_id, started_at, updated_at)
          SELECT ${id}, ${def.workflow.id}, ${projectId}, ${context.partitionOf(input.contactId)}, ${input.contactId}, 'RUNNING', ${trigger.id},
                 ${JSON.stringify(input.data)}::jsonb, ${input.id}, ${nowIso()}::timestamptz, ${nowIso()}::timestamptz
          WHERE NOT EXISTS (
            SELECT 1 FROM workflow_executions
            WHERE workflow_id = ${def.workflow.id} AND contact_id = ${input.contactId}
              AND (${!def.workflow.allowReentry} OR status IN ('RUNNING', 'WAITING')))
            AND EXISTS (SELECT 1 FROM contacts WHERE id = ${input.contactId})
            -- Share-locks the workflow: a structural edit (which locks it for update, then checks for
            -- active executions) either sees this execution or commits before it starts.
            AND EXISTS (SELECT 1 FROM workflows WHERE id = ${def.workflow.id} FOR SHARE)
          ON CONFLICT DO NOTHING
          RETURNING *`
        if (!started[0]) continue
        const exec = toState(started[0])
        executions.set(exec.id, exec)
        record(exec, trigger, "COMPLETED", { eventId: input.id, eventName: input.name })
        yield* advance(exec, trigger)
      }
      continue
    }
    switch (input.type) {
      case "advance": {
        const exec = executions.get(input.executionId)
        const step = exec && currentStep(exec)
        if (!exec || exec.status !== "RUNNING" || step?.type !== "TRIGGER") break
        if (!(yield* claim(exec, step, "COMPLETED", { manual: true }))) break
        yield* advance(exec, step)
        break
      }
      case "timers":
        for (const timer of input.timers) {
          const exec = executions.get(timer.executionId)
          // Stale: cancelled, resumed by its event, or a copy of a timer already handled.
          if (!exec || exec.status !== "WAITING" || exec.timerId !== timer.timerId) continue
          const step = currentStep(exec)
          if (!step) {
            finish(exec, "FAILED", { error: "the step it waited on no longer exists" })
            continue
          }
          exec.timerId = null
          if (step.type === "WAIT_FOR_EVENT") {
            exec.waitEvent = null
            record(exec, step, "COMPLETED", { outcome: "TIMEOUT" })
            yield* advance(exec, step, { waitOutcome: "TIMEOUT" })
          } else if (step.type === "SEND_EMAIL") {
            // Held at the billing cap: the send is tried again.
            yield* advance(exec, step, {}, true)
          } else {
            record(exec, step, "COMPLETED", { dueAt: timer.dueAt })
            yield* advance(exec, step)
          }
        }
        break
      case "webhookDone": {
        const exec = executions.get(input.executionId)
        const step = exec && currentStep(exec)
        // A late outcome for a cancelled execution changes nothing.
        if (!exec || exec.status !== "RUNNING" || step?.id !== input.stepId) break
        if (input.ok) yield* advance(exec, step)
        else finish(exec, "FAILED", { error: `WEBHOOK step failed: ${input.error ?? "unknown error"}` })
        break
      }
    }
  }

  // ---- write back ----
  const dirty = [...executions.values()].filter((exec) => exec.dirty)
  if (dirty.length > 0) {
    const at = nowIso()
    yield* sql`
      UPDATE workflow_executions e SET
        status = x.status, current_step_id = x."currentStepId", context = x.context, wait_event = x."waitEvent",
        timer_id = x."timerId", exit_reason = x."exitReason", error = x.error, updated_at = ${at}::timestamptz,
        finished_at = x."finishedAt"
      FROM jsonb_to_recordset(${JSON.stringify(dirty)}::jsonb) AS x(
        id uuid, status text, "currentStepId" uuid, context jsonb, "waitEvent" text, "timerId" uuid, "exitReason" text,
        error text, "finishedAt" timestamptz)
      WHERE e.id = x.id`
  }
  if (steps.size > 0) {
    yield* sql`
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, output, error,
                                            started_at, finished_at)
      SELECT x.id, x."executionId", x."stepId", x."stepType", ${projectId},
             (SELECT e.partition FROM workflow_executions e WHERE e.id = x."executionId"), x.status, x.output, x.error,
             x."startedAt", x."finishedAt"
      FROM jsonb_to_recordset(${JSON.stringify([...steps.values()])}::jsonb) AS x(
        id uuid, "executionId" uuid, "stepId" uuid, "stepType" text, status text, output jsonb, error text,
        "startedAt" timestamptz, "finishedAt" timestamptz)
      ON CONFLICT (execution_id, step_id) DO UPDATE SET
        status = EXCLUDED.status, output = COALESCE(EXCLUDED.output, workflow_step_executions.output),
        error = EXCLUDED.error, finished_at = EXCLUDED.finished_at`
  }
  if (clearedTimers.size > 0) {
    yield* sql`DELETE FROM workflow_timers WHERE execution_id = ANY(${pgArray([...clearedTimers])}::uuid[])`
  }
  if (newTimers.length > 0) {
    yield* sql`
      INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
      SELECT x."executionId", x.id, ${projectId}, (SELECT e.partition FROM workflow_executions e WHERE e.id = x."executionId"),
             x."stepId", x."dueAt"
      FROM jsonb_to_recordset(${JSON.stringify(newTimers)}::jsonb) AS x("executionId" uuid, id uuid, "stepId" uuid, "dueAt" timestamptz)
      ON CONFLICT (execution_id) DO UPDATE SET id = EXCLUDED.id, step_id = EXCLUDED.step_id, due_at = EXCLUDED.due_at`
  }
  if (emails.length > 0) yield* runtime.emails.enqueue(projectId, emails)
  // The workflows held at the cap record why; those that sent under it again clear it.
  const holds = [
    ...[...heldWorkflows].map(([id, reason]) => ({ id, reason })),
    ...[...sentUnderCap].filter((id) => !heldWorkflows.has(id)).map((id) => ({ id, reason: null }))
  ]
  if (holds.length > 0) {
    yield* sql`
      UPDATE workflows w SET billing_hold = x.reason
      FROM jsonb_to_recordset(${JSON.stringify(holds)}::jsonb) AS x(id uuid, reason text)
      WHERE w.id = x.id AND w.billing_hold IS DISTINCT FROM x.reason`
  }
  WorkflowMetrics.advanced.inc(outcome.advanced)
  outcome.timersSet = newTimers.length > 0
  return outcome
})
