/**
 * The workflow engine, run by the project's actor inside its batch transaction (applyBatch): it starts
 * executions from trigger events, resumes waiting ones (an awaited event, a due timer, a webhook's
 * outcome) and advances each one step by step until it waits, ends or fails. Nothing here runs in an
 * HTTP request. This file is the shell: what each step and input means is decided by the pure
 * interpreter (decider.ts, over steps decoded by the one step schema); Postgres is reached through the
 * executions repository (src/store/WorkflowExecutions.ts), mail through the MailQueue.
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
import { Clock, Effect, Result } from "effect"
import { toDataPatch } from "../domain/customData.ts"
import type { ContactFacts } from "../domain/conditions/evaluate.ts"
import type { ProjectMail } from "../mail/MailQueue.ts"
import { makeRenderer, type CompiledTemplate } from "../mail/render.ts"
import { holdReason, monthTurn } from "../store/Billing.ts"
import { ContactDataTooLarge } from "../store/Contacts.ts"
import type { NewEmail } from "../store/Emails.ts"
import type { Template } from "../store/Templates.ts"
import type { ExecutionState, NewTimer, StepRecord } from "../store/WorkflowExecutions.ts"
import { factsToLoad, type LoadedFacts, type StepReads } from "./factsCache.ts"
import { decideResume, decideStep, factsRead, type ResumeInput, type RunnableStep } from "./decider.ts"
import { type Choice, nextStep } from "./graph.ts"
import { WorkflowMetrics } from "./metrics.ts"
import { type Def, loadWorkflows } from "./definitions.ts"
import { type BatchEvent, NOTHING, type WorkflowContext, type WorkflowInput } from "./batchInputs.ts"
import { makeStepLedger } from "./stepLedger.ts"

/** Kept importable from here for the actors, which run the engine. */
export { newWorkflowState, type WorkflowState } from "./definitions.ts"
export type { WorkflowInput } from "./batchInputs.ts"

/** A step that reads no events (the contact's own fields only). */
const NO_READS: StepReads = { events: new Set(), windows: new Map() }

const renderer = makeRenderer()

/**
 * Applies the batch's workflow inputs, in order. `inputs` holds the batch's events and workflow
 * messages as they came; the caller adds the returned flags to its outcome.
 */
export const runWorkflows = Effect.fnUntraced(function*(context: WorkflowContext, inputs: ReadonlyArray<WorkflowInput>) {
  if (inputs.length === 0) return NOTHING
  const clock = yield* Clock.Clock
  const { projectId, runtime, state } = context
  const repository = runtime.executions
  if (state.defs === undefined || inputs.some((input) => input.kind === "workflow" && input.type === "changed")) {
    state.defs = yield* loadWorkflows(runtime, projectId)
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
  const executions = new Map<string, ExecutionState>()
  const byIds = new Set<string>()
  for (const input of relevant) {
    if (input.kind !== "workflow") continue
    if (input.type === "advance" || input.type === "webhookDone") byIds.add(input.executionId)
    if (input.type === "timers") { for (const timer of input.timers) byIds.add(timer.executionId) }
  }
  for (const exec of yield* repository.lock(projectId, [...byIds])) executions.set(exec.id, exec)
  /** Executions waiting for an event, by contact. */
  const waiting = new Map<string, Array<ExecutionState>>()
  const awaitIn = (exec: ExecutionState) => {
    const list = waiting.get(exec.contactId) ?? []
    list.push(exec)
    waiting.set(exec.contactId, list)
  }
  const awaitedEvents = relevant.filter((input): input is BatchEvent => input.kind === "event" && defs.awaited.has(input.name))
  const waitingRows = yield* repository.lockWaiting(
    projectId,
    [...new Set(awaitedEvents.map((event) => event.name))],
    [...new Set(awaitedEvents.map((event) => event.contactId))]
  )
  for (const row of waitingRows) {
    const exec = executions.get(row.id) ?? row
    executions.set(exec.id, exec)
    awaitIn(exec)
  }

  // ---- what the batch writes at the end ----
  const steps = new Map<string, StepRecord>()
  const newTimers: Array<NewTimer> = []
  const clearedTimers = new Set<string>()
  const emails: Array<NewEmail> = []

  // Per-batch caches of what steps read.
  const templates = new Map<string, { template: Template; subject: CompiledTemplate; body: CompiledTemplate } | undefined>()
  const facts = new Map<string, LoadedFacts & { readonly facts: ContactFacts | undefined }>()
  let mail: ProjectMail | undefined
  /** What the month's `workflows` cap still allows in this batch: read (and locked) on the first send; null = no cap. */
  let capRoom: { limit: number; remaining: number } | null | undefined
  /** Workflows whose mail this batch held at the cap (with why), and those that queued mail under a cap. */
  const heldWorkflows = new Map<string, string>()
  const sentUnderCap = new Set<string>()

  /** A contact's facts for a step evaluated now (factsCache.ts: loaded once per batch unless a step needs more). */
  const factsOf = Effect.fnUntraced(function*(contactId: string, reads: StepReads = NO_READS) {
    const cached = facts.get(contactId)
    const toLoad = factsToLoad(cached, reads, clock.currentTimeMillisUnsafe())
    if (toLoad === "loaded") return cached!.facts
    const loaded = (yield* context.loadFacts(projectId, [contactId], toLoad.events, toLoad.windowed, toLoad.since)).get(contactId)
    facts.set(contactId, { ...toLoad, facts: loaded })
    return loaded
  })

  const templateOf = Effect.fnUntraced(function*(id: string) {
    if (templates.has(id)) return templates.get(id)
    const template = yield* runtime.templates.get(projectId, id)
    const compiled = template
      ? yield* Effect.try(() => ({
        template,
        subject: renderer.compile(template.subject, "text"),
        body: renderer.compile(template.body, "html")
      }))
        .pipe(Effect.orElseSucceed(() => undefined))
      : undefined
    templates.set(id, compiled)
    return compiled
  })

  const { record, claim, finish, fail, wait } = makeStepLedger({ projectId, repository, steps, newTimers, stamp, nowIso, awaitIn })

  /** Parks an execution on its SEND_EMAIL step at the month's cap: it retries the step at the month's turn (or when resumed). */
  const holdAtCap = (exec: ExecutionState, def: Def, step: RunnableStep, limit: number) => {
    const reason = holdReason("workflows", limit)
    const retryAt = monthTurn(new Date(clock.currentTimeMillisUnsafe())).toISOString()
    wait(exec, step, null, retryAt, { billingHold: reason, retryAt })
    heldWorkflows.set(def.workflow.id, reason)
  }

  /** Queues a SEND_EMAIL step's mail; false when the step failed (recorded) or waits at the billing cap. */
  const sendEmail = Effect.fnUntraced(
    function*(exec: ExecutionState, def: Def, step: RunnableStep, templateId: string, customRecipient: string | null) {
      const compiled = yield* templateOf(templateId)
      if (!compiled) return fail(exec, step, "the template no longer exists (or no longer parses)"), false
      const contact = yield* factsOf(exec.contactId)
      if (!contact) return fail(exec, step, "the contact no longer exists"), false
      if (capRoom === undefined) {
        const room = yield* runtime.billing.allowance(projectId, "workflows")
        capRoom = room && { ...room }
      }
      if (capRoom !== null && capRoom.remaining === 0) return holdAtCap(exec, def, step, capRoom.limit), false
      mail ??= yield* runtime.mail.forProject(projectId)
      const { template } = compiled
      const prepared = yield* mail.render(
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
          type: template.type === "TRANSACTIONAL" || customRecipient !== null ? "TRANSACTIONAL" : "MARKETING",
          templateId: template.id,
          workflowId: def.workflow.id
        },
        { contactId: contact.id, email: contact.email, name: null, data: contact.data },
        { ...exec.context, event: exec.context }
      ).pipe(Effect.result)
      if (Result.isFailure(prepared)) return fail(exec, step, prepared.failure.message), false
      const email: NewEmail = customRecipient === null ? prepared.success : { ...prepared.success, to: customRecipient, contactId: null }
      if (!(yield* claim(exec, step, "COMPLETED", { emailId: email.id, to: email.to }))) return false
      if (capRoom !== null) {
        capRoom.remaining--
        sentUnderCap.add(def.workflow.id)
      }
      emails.push(email)
      outcome.mailQueued = true
      return true
    }
  )

  /**
   * Advances an execution from `from` (already done) along `choice`, step by step, until it waits,
   * ends or fails; with `again`, `from` is not done (a send held at the billing cap) and runs first.
   */
  const advance = Effect.fnUntraced(function*(exec: ExecutionState, from: RunnableStep, choice: Choice = {}, again = false) {
    const def = defs.byId.get(exec.workflowId)
    exec.dirty = true
    exec.status = "RUNNING"
    outcome.advanced++
    if (!def) return finish(exec, "FAILED", { error: "the workflow no longer exists" })
    let step = again ? from : nextStep(def.graph, from.id, choice)
    while (exec.status === "RUNNING") {
      if (!step) return finish(exec, "COMPLETED")
      exec.currentStepId = step.id
      const current: RunnableStep = step
      const reads = factsRead(current)
      const contact = reads === undefined ? undefined : yield* factsOf(exec.contactId, reads)
      const decision = decideStep(current, { now: clock.currentTimeMillisUnsafe(), context: exec.context, contact })
      switch (decision._tag) {
        case "Fail":
          return fail(exec, current, decision.error)
        case "Continue":
          record(exec, current, "COMPLETED", decision.output)
          step = nextStep(def.graph, current.id, decision.choice)
          break
        case "Wait":
          return wait(exec, current, decision.waitEvent, decision.dueAt, decision.output)
        case "SendEmail":
          if (!(yield* sendEmail(exec, def, current, decision.templateId, decision.customRecipient))) return
          step = nextStep(def.graph, current.id)
          break
        case "CallWebhook":
          // The intent, recorded now; the runner performs it after the commit and reports back.
          if (yield* claim(exec, current, "RUNNING", null)) outcome.webhooksQueued = true
          return
        case "UpdateContact": {
          const updated = yield* runtime.contacts.update(projectId, exec.contactId, {
            subscribed: decision.subscribed,
            patch: toDataPatch(decision.updates),
            source: "workflow"
          }).pipe(Effect.catchTag("ContactDataTooLarge", (error) => Effect.succeed(error)))
          if (updated instanceof ContactDataTooLarge) {
            return fail(exec, current, `the update would grow the contact's data past ${updated.limitBytes / 1024} KiB`)
          }
          if (!updated || !("id" in updated)) return fail(exec, current, "the contact no longer exists")
          facts.delete(exec.contactId)
          record(exec, current, "COMPLETED", { updated: Object.keys(decision.updates), subscribed: updated.subscribed })
          step = nextStep(def.graph, current.id)
          break
        }
        case "Exit":
          record(exec, current, "COMPLETED", { reason: decision.reason })
          return finish(exec, "EXITED", { exitReason: decision.reason })
      }
    }
  })

  /** The step an execution is on, when it is still part of its workflow. */
  const currentStep = (exec: ExecutionState) => {
    const def = defs.byId.get(exec.workflowId)
    return exec.currentStepId === null ? undefined : def?.graph.steps.get(exec.currentStepId)
  }

  /** Applies the decider's answer to an input naming `exec`. */
  const resume = Effect.fnUntraced(function*(exec: ExecutionState, input: ResumeInput) {
    const step = currentStep(exec)
    const decision = decideResume(exec, step, input)
    if (decision._tag === "Ignore") return
    if (decision._tag === "Fail") {
      // A failed webhook ends on its step (the runner recorded it); a vanished step has none to record.
      return finish(exec, "FAILED", { error: decision.error })
    }
    if (decision.claim !== undefined && !(yield* claim(exec, step!, "COMPLETED", decision.claim))) return
    // A due timer is spent; an awaited event also takes the wait's timeout timer away.
    if (input.kind === "event" && exec.timerId !== null) clearedTimers.add(exec.id)
    if (input.kind === "timer" || input.kind === "event") {
      exec.timerId = null
      exec.waitEvent = null
    }
    if (decision.context) exec.context = { ...exec.context, ...decision.context }
    if (decision.output !== undefined) record(exec, step!, "COMPLETED", decision.output)
    yield* advance(exec, step!, decision.choice, decision.retry === true)
  })

  // ---- the inputs, in order ----
  for (const input of relevant) {
    if (input.kind === "contactDeleted") {
      const reason = "the contact was deleted"
      const loaded = [...executions.values()].filter((exec) => exec.contactId === input.contactId)
      for (const exec of loaded) {
        if (exec.status !== "RUNNING" && exec.status !== "WAITING") continue
        if (exec.timerId !== null) clearedTimers.add(exec.id)
        finish(exec, "CANCELLED", { error: reason })
      }
      const others = yield* repository.cancel({
        projectId,
        contactId: input.contactId,
        except: loaded.map((exec) => exec.id),
        error: reason,
        stepError: reason
      })
      // The step each was on ends with it (as on a cancel through the api).
      const ids = [...loaded.map((exec) => exec.id), ...others.map((row) => row.id)]
      for (const record of steps.values()) {
        if (ids.includes(record.executionId) && record.status === "WAITING")
          Object.assign(record, { status: "SKIPPED", error: reason, finishedAt: nowIso() })
      }
      yield* repository.skipOpenSteps(loaded.map((exec) => exec.id), reason)
      continue
    }
    if (input.kind === "event") {
      // An awaited event resumes the contact's executions waiting for it (EVENT branch).
      const list = waiting.get(input.contactId)
      if (list && defs.awaited.has(input.name)) {
        for (const exec of list.filter((candidate) => candidate.status === "WAITING" && candidate.waitEvent === input.name)) {
          yield* resume(exec, { kind: "event", id: input.id, name: input.name, data: input.data })
        }
        waiting.set(input.contactId, list.filter((candidate) => candidate.status === "WAITING"))
      }
      // A trigger event starts an execution per enabled workflow, unless one is active for the contact
      // or (without allowReentry) one ever ran; the source event id makes a second start impossible.
      for (const def of defs.triggers.get(input.name) ?? []) {
        const trigger = def.graph.trigger
        if (!trigger) continue
        const exec = yield* repository.start({
          projectId,
          workflowId: def.workflow.id,
          allowReentry: def.workflow.allowReentry,
          partition: context.partitionOf(input.contactId),
          contactId: input.contactId,
          triggerStepId: trigger.id,
          context: input.data,
          sourceEventId: input.id,
          at: nowIso()
        })
        if (!exec) continue
        executions.set(exec.id, exec)
        record(exec, trigger, "COMPLETED", { eventId: input.id, eventName: input.name })
        yield* advance(exec, trigger)
      }
      continue
    }
    switch (input.type) {
      case "advance": {
        const exec = executions.get(input.executionId)
        if (exec) yield* resume(exec, { kind: "advance" })
        break
      }
      case "timers":
        for (const timer of input.timers) {
          const exec = executions.get(timer.executionId)
          if (exec) yield* resume(exec, { kind: "timer", timerId: timer.timerId, dueAt: timer.dueAt })
        }
        break
      case "webhookDone": {
        const exec = executions.get(input.executionId)
        if (exec) yield* resume(exec, { kind: "webhookDone", stepId: input.stepId, ok: input.ok, error: input.error ?? undefined })
        break
      }
    }
  }

  // ---- write back ----
  // The workflows held at the cap record why; those that sent under it again clear it.
  const holds = [
    ...[...heldWorkflows].map(([id, reason]) => ({ id, reason })),
    ...[...sentUnderCap].filter((id) => !heldWorkflows.has(id)).map((id) => ({ id, reason: null }))
  ]
  yield* repository.write(projectId, {
    executions: [...executions.values()],
    steps: [...steps.values()],
    clearedTimers: [...clearedTimers],
    newTimers,
    holds,
    at: nowIso()
  })
  if (emails.length > 0) yield* runtime.mail.queue(projectId, emails)
  WorkflowMetrics.advanced.inc(outcome.advanced)
  outcome.timersSet = newTimers.length > 0
  return outcome
})
