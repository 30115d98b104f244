/**
 * Workflows across worker restarts and crashes: an api process and a separate worker (killed and
 * restarted), real Postgres, NATS, SMTP sink and test DNS. The worker's clock is moved with
 * CLOCK_OFFSET_MS to reach delays and timeouts without waiting for them.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestDnsServer } from "../support/dns.ts"
import { createMailStack, type MailStack, verifyDomain } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import type { SmtpSink } from "../support/smtp.ts"
import { request, type Service, type Stack, type TestProject } from "../support/stack.ts"
import { buildWorkflow, call, type Client, executionsOf, settled } from "./support.ts"

const MINUTE = 60_000
let mail: MailStack
let stack: Stack
let api: Service
let worker: Service
let project: TestProject
let dns: TestDnsServer
let smtp: SmtpSink
let client: Client
let hung: Server
let hungHits = 0
let clock = 0

const restartWorker = async (signal: NodeJS.Signals, offsetMs: number) => {
  await worker.stop(signal)
  clock = offsetMs
  worker = await stack.start("worker", { CLOCK_OFFSET_MS: String(offsetMs) })
}

beforeAll(async () => {
  hung = createServer(() => {
    hungHits++ // never answers
  })
  await new Promise<void>((resolve) => hung.listen(0, "127.0.0.2", resolve))
  mail = await createMailStack({ WEBHOOK_ALLOW_CIDRS: "127.0.0.2/32" })
  ;({ stack, dns, smtp } = mail)
  api = await stack.start("api")
  worker = await stack.start("worker")
  project = await stack.createProject()
  client = { url: api.url, key: project.secretKey }
  await verifyDomain({ api, dns }, project.secretKey, "acme.test")
}, 60_000)

afterAll(async () => {
  await mail?.stop()
  hung?.closeAllConnections()
  hung?.close()
})

const track = async (email: string, event: string, data?: Record<string, unknown>) => {
  const response = await request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email, event, data, subscribed: true } })
  expect(response.status).toBe(200)
  return response.json.data as { contact: string }
}
const template = async (body: string) => {
  const created = await call(client, "POST", "/templates", { name: `t ${Math.random()}`, subject: "Hello", body, from: "hello@acme.test" })
  expect(created.status).toBe(201)
  return created.json.id as string
}

describe("workflow durability", () => {
  it("a DELAY resumes after the worker is SIGKILLed and restarted, when its (controlled) clock passes the due time", async () => {
    const templateId = await template("<p>Ten minutes later</p>")
    const { workflowId } = await buildWorkflow(client, {
      name: "Later",
      eventName: "later",
      first: "delay",
      steps: {
        delay: { type: "DELAY", config: { amount: 10, unit: "minutes" }, next: "send" },
        send: { type: "SEND_EMAIL", config: { templateId } }
      }
    })
    await track("later@wf.test", "later")
    await settled(client, workflowId, "WAITING")
    await restartWorker("SIGKILL", 11 * MINUTE)
    const [execution] = await settled(client, workflowId, "COMPLETED", 1, 30_000)
    const delay = execution!.steps.find((step) => step.stepType === "DELAY")!
    expect(delay.status).toBe("COMPLETED")
    await eventually(async () => expect(smtp.messages.filter((mail) => mail.envelopeTo.includes("later@wf.test"))).toHaveLength(1), 15_000)
  }, 90_000)

  it("WAIT_FOR_EVENT takes the TIMEOUT branch when the clock passes the timeout first; a late event changes nothing", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Timeout",
      eventName: "trial",
      first: "wait",
      steps: {
        wait: { type: "WAIT_FOR_EVENT", config: { eventName: "paid", timeout: 3600 }, next: { EVENT: "paid", TIMEOUT: "late" } },
        paid: { type: "EXIT", config: { reason: "paid" } },
        late: { type: "EXIT", config: { reason: "timed out" } }
      }
    })
    await track("trial@wf.test", "trial")
    await settled(client, workflowId, "WAITING")
    await restartWorker("SIGTERM", clock + 61 * MINUTE)
    const [execution] = await settled(client, workflowId, "EXITED", 1, 30_000)
    expect(execution!.exitReason).toBe("timed out")
    await track("trial@wf.test", "paid")
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const [after] = await executionsOf(client, workflowId)
    expect(after).toMatchObject({ status: "EXITED", exitReason: "timed out" })
  }, 90_000)

  it("a worker SIGKILLed while executions send never makes a workflow email twice", async () => {
    const templateId = await template("<p>Once only</p>")
    const { workflowId } = await buildWorkflow(client, {
      name: "Crash",
      eventName: "crash",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId } } }
    })
    const count = 300
    const before = smtp.messages.length
    for (let i = 0; i < count; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => track(`crash${i + j}@wf.test`, "crash")))
    }
    // Kill it as soon as sending has begun (wherever the executions and the sender are by then).
    await eventually(async () => expect(smtp.messages.length).toBeGreaterThan(before), 30_000)
    await restartWorker("SIGKILL", clock)
    await settled(client, workflowId, "COMPLETED", count, 60_000)
    const rows = await stack.query<{ n: number; contacts: number; steps: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS contacts,
              (SELECT count(*)::int FROM workflow_step_executions s JOIN workflow_executions e ON e.id = s.execution_id
               WHERE e.workflow_id = $1 AND s.step_type = 'SEND_EMAIL') AS steps
       FROM emails WHERE workflow_id = $1`,
      [workflowId]
    )
    expect(rows[0]).toEqual({ n: count, contacts: count, steps: count })
    await eventually(async () => {
      const [sent] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM emails WHERE workflow_id = $1 AND status = 'SENT'", [
        workflowId
      ])
      expect(sent!.n).toBe(count)
    }, 30_000)
    // Each recipient got one email (one Message-ID). The sender may repeat the round that was in flight
    // at the kill, with the same Message-ID (its documented at-most-a-round resend); never a second email.
    const mine = smtp.messages.filter((mail) => mail.envelopeTo.some((to) => /^crash\d+@wf\.test$/.test(to)))
    const ids = new Map<string, Set<string>>()
    for (const mail of mine) {
      const to = mail.envelopeTo[0]!
      ids.set(to, (ids.get(to) ?? new Set()).add(String(mail.parsed.messageId)))
    }
    expect(ids.size).toBe(count)
    expect([...ids.values()].every((set) => set.size === 1)).toBe(true)
    expect(mine.length - count).toBeLessThanOrEqual(128)
  }, 180_000)

  it("a WEBHOOK request in flight when the worker is SIGKILLed is not repeated: the step fails", async () => {
    const { workflowId } = await buildWorkflow(client, {
      name: "Hang",
      eventName: "hang",
      first: "hook",
      steps: { hook: { type: "WEBHOOK", config: { url: `http://127.0.0.2:${(hung.address() as AddressInfo).port}/hang` } } }
    })
    await track("hang@wf.test", "hang")
    await eventually(async () => expect(hungHits).toBe(1), 15_000)
    await restartWorker("SIGKILL", clock)
    const [execution] = await settled(client, workflowId, "FAILED", 1, 30_000)
    expect(execution!.error).toContain("outcome was known")
    expect(execution!.steps.at(-1)).toMatchObject({ stepType: "WEBHOOK", status: "FAILED", attempts: 1 })
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    expect(hungHits).toBe(1)
  }, 90_000)
})
