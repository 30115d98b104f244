/**
 * Executions advanced by the project's actor, end to end: real api + worker, Postgres, NATS, an SMTP
 * sink and a test DNS server. Every step type and branch, reentry, wait-for-event, cancel.
 */
import { describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { request } from "../support/stack.ts"
import { buildWorkflow, call, type Client, executionsOf, settled } from "./support.ts"

let context: MailContext
let client: Client
withMailStack((ready) => {
  context = ready
  client = { url: ready.api.url, key: ready.project.secretKey }
})

const track = async (email: string, event: string, data?: Record<string, unknown>, subscribed?: boolean) => {
  const response = await request(context.api.url, "POST", "/v1/track", {
    key: context.project.publicKey,
    body: { email, event, data, subscribed }
  })
  expect(response.status).toBe(200)
  return response.json.data as { contact: string; event: string }
}
const template = async (body: string, type = "MARKETING", subject = "Hi {{ email }}") => {
  const created = await call(client, "POST", "/templates", { name: `t ${Math.random()}`, subject, body, from: "hello@acme.test", type })
  expect(created.status, JSON.stringify(created.json)).toBe(201)
  return created.json.id as string
}
const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))

describe("workflow executions", () => {
  it("an event triggers SEND_EMAIL: the mail (with the trigger's data) reaches SMTP, the execution completes with its history", async () => {
    const templateId = await template("<p>Welcome on the {{ event.plan }} plan, {{ name ?? 'friend' }}</p>")
    const { workflowId, ids } = await buildWorkflow(client, {
      name: "Welcome",
      eventName: "signed_up",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId } } }
    })
    await track("ada@wf.test", "signed_up", { plan: "pro" }, true)
    const [execution] = await settled(client, workflowId, "COMPLETED")
    expect(execution!.context).toEqual({ plan: "pro" })
    expect(execution!.steps.map((step) => [step.stepType, step.status])).toEqual([["TRIGGER", "COMPLETED"], ["SEND_EMAIL", "COMPLETED"]])
    const emailId = execution!.steps[1]!.output.emailId
    const [mail] = await eventually(async () => {
      const mails = mailsTo("ada@wf.test")
      expect(mails).toHaveLength(1)
      return mails
    })
    expect(mail!.parsed.html).toContain("Welcome on the pro plan")
    // Marketing mail: one-click unsubscribe headers; the email row names the workflow.
    expect(mail!.parsed.headerLines.find((line) => line.key === "list-unsubscribe-post")?.line).toBe(
      "List-Unsubscribe-Post: List-Unsubscribe=One-Click"
    )
    const email = await call(client, "GET", `/emails/${emailId}`)
    expect(email.json).toMatchObject({ workflowId, type: "MARKETING" })
    expect((await call(client, "GET", `/templates/${templateId}/usage`)).json.workflows).toEqual([{
      id: workflowId,
      name: "Welcome",
      stepId: ids.send
    }])
  })

  it("reentry: one execution per contact unless allowReentry, never two at once, never two per source event", async () => {
    const once = await buildWorkflow(client, {
      name: "Once",
      eventName: "visit",
      first: "exit",
      steps: { exit: { type: "EXIT", config: { reason: "seen" } } }
    })
    const again = await buildWorkflow(client, {
      name: "Again",
      eventName: "visit",
      allowReentry: true,
      first: "exit",
      steps: { exit: { type: "EXIT" } }
    })
    const waits = await buildWorkflow(client, {
      name: "Waits",
      eventName: "visit",
      allowReentry: true,
      first: "wait",
      steps: { wait: { type: "WAIT_FOR_EVENT", config: { eventName: "never" } } }
    })
    await track("re@wf.test", "visit")
    await settled(client, once.workflowId, "EXITED")
    await settled(client, again.workflowId, "EXITED")
    await track("re@wf.test", "visit")
    await settled(client, again.workflowId, "EXITED", 2)
    const [exited] = await settled(client, once.workflowId, "EXITED")
    expect(exited!.exitReason).toBe("seen")
    // Still waiting from the first visit: the second started nothing.
    expect((await executionsOf(client, waits.workflowId)).map((e) => e.status)).toEqual(["WAITING"])
    const sources = await context.stack.query<{ n: number }>(
      "SELECT count(DISTINCT source_event_id)::int AS n FROM workflow_executions WHERE workflow_id = $1",
      [again.workflowId]
    )
    expect(sources[0]!.n).toBe(2)
    // A disabled workflow starts nothing.
    await call(client, "PATCH", `/workflows/${again.workflowId}`, { enabled: false })
    await track("re@wf.test", "visit")
    await track("re2@wf.test", "visit")
    await settled(client, once.workflowId, "EXITED", 2)
    expect(await executionsOf(client, again.workflowId)).toHaveLength(2)
  })

  it("CONDITION takes yes / no on contact data and the execution context; UPDATE_CONTACT writes through the custom-data rules", async () => {
    const { workflowId, ids } = await buildWorkflow(client, {
      name: "Branches",
      eventName: "purchase",
      allowReentry: true,
      first: "big",
      steps: {
        big: {
          type: "CONDITION",
          config: { field: "context.total", operator: "greaterThan", value: 100 },
          next: { yes: "vip", no: "tier" }
        },
        tier: {
          type: "CONDITION",
          config: { condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
          next: { yes: "proExit", no: "freeExit" }
        },
        vip: {
          type: "UPDATE_CONTACT",
          config: { updates: { vip: true, note: "", plan: null }, subscriptionAction: "unsubscribe" },
          next: "vipExit"
        },
        vipExit: { type: "EXIT", config: { reason: "vip" } },
        proExit: { type: "EXIT", config: { reason: "pro" } },
        freeExit: { type: "EXIT", config: { reason: "free" } }
      }
    })
    await call(client, "POST", "/contacts", { email: "big@wf.test", subscribed: true, data: { plan: "pro" } })
    await call(client, "POST", "/contacts", { email: "pro@wf.test", data: { plan: "pro" } })
    await call(client, "POST", "/contacts", { email: "free@wf.test", data: { plan: "free" } })
    const big = await track("big@wf.test", "purchase", { total: 250 })
    await track("pro@wf.test", "purchase", { total: 20 })
    await track("free@wf.test", "purchase", { total: 20 })
    const executions = await settled(client, workflowId, "EXITED", 3)
    const reasons = Object.fromEntries(
      await Promise.all(executions.map(async (execution) => {
        const contact = await call(client, "GET", `/contacts/${execution.contactId}`)
        return [contact.json.email, execution.exitReason]
      }))
    )
    expect(reasons).toEqual({ "big@wf.test": "vip", "pro@wf.test": "pro", "free@wf.test": "free" })
    const vip = executions.find((execution) => execution.contactId === big.contact)!
    expect(vip.steps.map((step) => step.stepId)).toEqual([ids.trigger, ids.big, ids.vip, ids.vipExit])
    expect(vip.steps[1]!.output).toEqual({ branch: "yes" })
    // Stored: vip set, "" ignored, null deleted; unsubscribed (and announced like any other change).
    const contact = await call(client, "GET", `/contacts/${big.contact}`)
    expect(contact.json).toMatchObject({ subscribed: false, data: { vip: true } })
    expect(contact.json.data).not.toHaveProperty("plan")
    expect(contact.json.data).not.toHaveProperty("note")
    await eventually(async () => {
      const events = await call(client, "GET", `/events/contact/${big.contact}`)
      expect(events.json.data.map((event: { name: string }) => event.name)).toContain("contact.unsubscribed")
    })
    // What CONDITION steps can read: the events seen, with their data keys, and the context fields.
    const available = (await call(client, "GET", "/workflows/fields")).json
    expect(available.events).toContainEqual({ name: "purchase", dataKeys: ["total"] })
    expect(available.contextFields).toContain("context.total")
    expect(available.contactFields).toContainEqual({ field: "data.vip", type: "boolean" })
  })

  it("WAIT_FOR_EVENT follows EVENT when the event comes first (its data joins the context) and TIMEOUT when time runs out", async () => {
    const templateId = await template("<p>Thanks for paying {{ event.amount }}</p>", "TRANSACTIONAL")
    const { workflowId } = await buildWorkflow(client, {
      name: "Wait",
      eventName: "trial_started",
      first: "wait",
      steps: {
        wait: { type: "WAIT_FOR_EVENT", config: { eventName: "paid", timeout: 2 }, next: { EVENT: "thanks", TIMEOUT: "late" } },
        thanks: { type: "SEND_EMAIL", config: { templateId }, next: "paidExit" },
        paidExit: { type: "EXIT", config: { reason: "paid" } },
        late: { type: "EXIT", config: { reason: "timed out" } }
      }
    })
    await track("payer@wf.test", "trial_started", { trial: 14 })
    await eventually(async () => expect((await executionsOf(client, workflowId)).map((e) => e.status)).toEqual(["WAITING"]))
    await track("payer@wf.test", "paid", { amount: 42 })
    await track("slow@wf.test", "trial_started")
    const executions = await settled(client, workflowId, "EXITED", 2)
    const byReason = Object.fromEntries(executions.map((execution) => [execution.exitReason ?? "", execution] as const))
    expect(byReason.paid!.context).toEqual({ trial: 14, amount: 42 })
    expect(byReason.paid!.steps.find((step) => step.stepType === "WAIT_FOR_EVENT")!.output).toMatchObject({ outcome: "EVENT" })
    expect(byReason["timed out"]!.steps.find((step) => step.stepType === "WAIT_FOR_EVENT")!.output).toEqual({ outcome: "TIMEOUT" })
    const [mail] = await eventually(async () => {
      const mails = mailsTo("payer@wf.test")
      expect(mails).toHaveLength(1)
      return mails
    })
    expect(mail!.parsed.html).toContain("Thanks for paying 42")
    // A transactional template's mail goes as transactional (no List-Unsubscribe).
    expect(mail!.parsed.headerLines.some((line) => line.key === "list-unsubscribe")).toBe(false)
    // The event's timer went with the resumption.
    expect(
      await context.stack.query(
        "SELECT 1 FROM workflow_timers t JOIN workflow_executions e ON e.id = t.execution_id WHERE e.workflow_id = $1",
        [workflowId]
      )
    ).toEqual([])
  })

  it("DELAY waits on a durable timer; cancel one and cancel all stop waiting executions, and their timers come to nothing", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Delays",
      eventName: "nudge",
      first: "delay",
      steps: {
        delay: { type: "DELAY", config: { amount: 1, unit: "minutes" }, next: "exit" },
        exit: { type: "EXIT", config: { reason: "after delay" } }
      }
    })
    await track("d1@wf.test", "nudge")
    await track("d2@wf.test", "nudge")
    await track("d3@wf.test", "nudge")
    const waiting = await settled(client, workflowId, "WAITING", 3)
    const timers = await context.stack.query<{ due_at: Date }>(
      "SELECT t.due_at FROM workflow_timers t JOIN workflow_executions e ON e.id = t.execution_id WHERE e.workflow_id = $1",
      [workflowId]
    )
    expect(timers).toHaveLength(3)
    for (const timer of timers) expect(new Date(timer.due_at).getTime()).toBeGreaterThan(Date.now() + 30_000)
    const cancelled = await call(client, "DELETE", `/workflows/${workflowId}/executions/${waiting[0]!.id}`)
    expect(cancelled.json.status).toBe("CANCELLED")
    // Its timer is gone; make the others due now: they resume (the cancelled one stays cancelled).
    await context.stack.query("UPDATE workflow_timers SET due_at = now() WHERE execution_id = ANY($1::uuid[])", [[waiting[1]!.id]])
    await eventually(async () => {
      const statuses = Object.fromEntries((await executionsOf(client, workflowId)).map((e) => [e.id, e.status]))
      expect(statuses).toEqual({ [waiting[0]!.id]: "CANCELLED", [waiting[1]!.id]: "EXITED", [waiting[2]!.id]: "WAITING" })
    })
    expect((await call(client, "POST", `/workflows/${workflowId}/executions/cancel-all`)).json).toEqual({ cancelled: 1 })
    // A timer published for a cancelled execution is a no-op.
    await context.stack.query(
      `INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
       SELECT id, gen_random_uuid(), project_id, partition, current_step_id, now() FROM workflow_executions WHERE id = $1`,
      [waiting[2]!.id]
    )
    await eventually(async () =>
      expect(await context.stack.query("SELECT 1 FROM workflow_timers WHERE execution_id = $1", [waiting[2]!.id])).toEqual([])
    )
    await new Promise((resolve) => setTimeout(resolve, 500))
    const final = Object.fromEntries((await executionsOf(client, workflowId)).map((e) => [e.id, e.status]))
    expect(final[waiting[2]!.id]).toBe("CANCELLED")
    const history = (await call(client, "GET", `/workflows/${workflowId}/executions/${waiting[2]!.id}`)).json.steps
    expect(history.find((step: { stepType: string }) => step.stepType === "DELAY").status).toBe("SKIPPED")
  })

  it("deleting a contact cancels its active executions (a wait without timeout would otherwise last forever)", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Forever",
      eventName: "forever",
      first: "wait",
      steps: { wait: { type: "WAIT_FOR_EVENT", config: { eventName: "never" } } }
    })
    const tracked = await track("gone@wf.test", "forever")
    await track("stays@wf.test", "forever")
    await settled(client, workflowId, "WAITING", 2)
    expect((await call(client, "DELETE", `/contacts/${tracked.contact}`)).status).toBe(204)
    await eventually(async () => {
      const byContact = Object.fromEntries((await executionsOf(client, workflowId)).map((e) => [e.contactId, e]))
      expect(byContact[tracked.contact]).toMatchObject({ status: "CANCELLED", error: "the contact was deleted" })
      expect(Object.values(byContact).map((e) => e.status).sort()).toEqual(["CANCELLED", "WAITING"])
    })
  })

  it("emitted events trigger and resume too: segment.<slug>.entry starts it, email.sent (the mail it sent) resumes it", async () => {
    const segment = await call(client, "POST", "/segments", {
      name: "Gold members",
      trackMembership: true,
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "gold" }] }] }
    })
    expect(segment.status).toBe(201)
    const templateId = await template("<p>Welcome to gold</p>")
    const { workflowId } = await buildWorkflow(client, {
      name: "Gold",
      eventName: "segment.gold-members.entry",
      first: "send",
      steps: {
        send: { type: "SEND_EMAIL", config: { templateId }, next: "sent" },
        sent: { type: "WAIT_FOR_EVENT", config: { eventName: "email.sent", timeout: 600 }, next: { EVENT: "done" } },
        done: { type: "EXIT", config: { reason: "mail went out" } }
      }
    })
    const contact = await call(client, "POST", "/contacts", { email: "gold@wf.test", subscribed: true, data: { tier: "silver" } })
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await executionsOf(client, workflowId)).toEqual([])
    await call(client, "PATCH", `/contacts/${contact.json.id}`, { data: { tier: "gold" } })
    const [execution] = await settled(client, workflowId, "EXITED")
    expect(execution!.exitReason).toBe("mail went out")
    expect(execution!.context).toMatchObject({ segmentId: segment.json.id, subject: "Hi gold@wf.test" })
    expect(mailsTo("gold@wf.test")).toHaveLength(1)
  })

  it("a manual start runs from the trigger with the given context; a CUSTOM recipient gets the mail", async () => {
    const templateId = await template("<p>{{ email }} did {{ event.what }}</p>")
    const { workflowId } = await buildWorkflow(client, {
      name: "Manual",
      enabled: false,
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId, recipient: { type: "CUSTOM", customEmail: "Sales@Acme.test" } } } }
    })
    // Started by hand only: a MANUAL trigger, enabled (a disabled workflow starts nothing, by hand either).
    expect((await call(client, "PATCH", `/workflows/${workflowId}`, { triggerType: "MANUAL", enabled: true })).status).toBe(200)
    const contact = await call(client, "POST", "/contacts", { email: "lead@wf.test" })
    const started = await call(client, "POST", `/workflows/${workflowId}/executions`, {
      contactId: contact.json.id,
      context: { what: "a demo" }
    })
    expect(started.status).toBe(201)
    const [execution] = await settled(client, workflowId, "COMPLETED")
    expect(execution!.steps[0]!.output).toEqual({ manual: true })
    const [mail] = await eventually(async () => {
      const mails = mailsTo("sales@acme.test")
      expect(mails).toHaveLength(1)
      return mails
    })
    expect(mail!.parsed.html).toContain("lead@wf.test did a demo")
    expect(mailsTo("lead@wf.test")).toHaveLength(0)
  })
})
