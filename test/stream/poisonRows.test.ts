/**
 * One bad row never stalls a loop: for every background loop that reads a batch of rows (the sender,
 * campaign fan-out steps, scheduled campaigns, segment and workflow timers, the webhook runner,
 * segment backfills, domain re-checks) a row it cannot process is written straight into Postgres (or
 * produced through the API), and the row is set aside with its reason while the rows behind it, in
 * its project and in another, keep moving. Real api + worker, Postgres, NATS, SMTP sink, DNS server.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMailStack, emailStatus, type MailStack, verifyDomain } from "../support/mail.ts"
import { eventually, ownerPartition } from "../support/nats.ts"
import { request, type Service, type TestProject } from "../support/stack.ts"
import { buildWorkflow, call, type Client, executionsOf } from "../workflows/support.ts"

let mail: MailStack
let api: Service
let a: TestProject
let b: TestProject
let receiver: { server: Server; port: number; paths: Array<string> }

beforeAll(async () => {
  mail = await createMailStack({ DOMAIN_RECHECK_SECONDS: "1", WEBHOOK_ALLOW_CIDRS: "127.0.0.2/32" })
  api = await mail.stack.start("all")
  a = await mail.stack.createProject("A")
  b = await mail.stack.createProject("B")
  await verifyDomain({ api, dns: mail.dns }, a.secretKey, "a.test")
  await verifyDomain({ api, dns: mail.dns }, b.secretKey, "b.test")
  // Webhook receiver: /retry answers 503 (the step waits for its next attempt), anything else 200.
  const paths: Array<string> = []
  const server = createServer((req, res) => {
    paths.push(req.url!)
    req.resume()
    req.on("end", () => {
      res.writeHead(req.url!.startsWith("/retry") ? 503 : 200)
      res.end(req.url!.startsWith("/nul") ? "ok\u0000" : "ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve))
  receiver = { server, port: (server.address() as AddressInfo).port, paths }
}, 60_000)

afterAll(async () => {
  await new Promise<void>((resolve) => receiver?.server.close(() => resolve()))
  await mail?.stop()
})

const secret = (project: TestProject, method: string, path: string, body?: unknown) =>
  request(api.url, method, path, { key: project.secretKey, body })
const clientOf = (project: TestProject): Client => ({ url: api.url, key: project.secretKey })
const query = <T = Record<string, unknown>>(text: string, params: Array<unknown> = []) => mail.stack.query<T>(text, params)
const partition = (project: TestProject) => ownerPartition(project.id)
const track = async (project: TestProject, email: string, event: string, data?: Record<string, unknown>) => {
  const res = await request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email, event, data } })
  expect(res.status, JSON.stringify(res.json)).toBe(200)
  return res.json.data as { contact: string; event: string }
}
const send = async (project: TestProject, to: string, from: string) => {
  const res = await secret(project, "POST", "/v1/send", { to, from, subject: "Hi", body: "<p>hi</p>" })
  expect(res.status, JSON.stringify(res.json)).toBe(200)
  return res.json.data.emails[0].email as string
}

describe("the sender", () => {
  it("fails an email it cannot load (a row over the client's 16 MiB message limit) or that breaks a cap, and the queue moves on", async () => {
    // Queued first in line (transactional, due a minute ago): one row too large to read in one message,
    // one whose body was stored before the caps.
    const insert = (to: string, html: string, attachments: string) =>
      query<{ id: string }>(
        `INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, attachments, type, priority,
                             message_id, next_attempt_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'hello@a.test', 'Poison', $4, ${attachments}, 'TRANSACTIONAL', 0,
                 gen_random_uuid() || '@a.test', now() - interval '1 minute')
         RETURNING id`,
        [a.id, partition(a), to, html]
      ).then((rows) => rows[0]!.id)
    const unreadable = await insert(
      "unreadable@poison.test",
      "<p>x</p>",
      `jsonb_build_array(jsonb_build_object('filename', 'big.bin', 'content', repeat('A', 17 * 1024 * 1024)))`
    )
    const oversized = await insert("oversized@poison.test", `<p>${"x".repeat(6 * 1024 * 1024)}</p>`, "'[]'::jsonb")
    const behind = await send(a, "behind@poison.test", "hello@a.test")
    const other = await send(b, "other@poison.test", "hello@b.test")

    await emailStatus({ api, project: a }, behind, "SENT")
    await emailStatus({ api, project: b }, other, "SENT")
    const failed = await emailStatus({ api, project: a }, unreadable, "FAILED")
    expect(failed.error).toMatch(/^cannot be sent: .*exceeds maxMessageSize 16777216/)
    expect((await emailStatus({ api, project: a }, oversized, "FAILED")).error).toMatch(/HTML body is at most 5242880 bytes/)
    expect(mail.smtp.messages.filter((message) => message.envelopeTo[0]!.endsWith("@poison.test")).map((m) => m.envelopeTo[0]).sort())
      .toEqual(["behind@poison.test", "other@poison.test"])
  })
})

describe("campaign fan-out", () => {
  it("stops a campaign whose step cannot run (its body no longer compiles) with the reason; other campaigns send", async () => {
    await secret(a, "POST", "/contacts", { email: "fan@poison.test", subscribed: true })
    await secret(b, "POST", "/contacts", { email: "fan@poison.test", subscribed: true })
    const campaign = async (project: TestProject, name: string, from: string) => {
      const res = await secret(project, "POST", "/campaigns", {
        name,
        subject: name,
        body: "<p>{{ email }}</p>",
        from,
        audienceType: "ALL"
      })
      expect(res.status, JSON.stringify(res.json)).toBe(201)
      return res.json.data.id as string
    }
    const poison = await campaign(a, "Poison", "news@a.test")
    const good = await campaign(a, "Good", "news@a.test")
    const other = await campaign(b, "Other", "news@b.test")
    await query("UPDATE campaigns SET body = '{% if %}broken' WHERE id = $1", [poison])
    for (const [project, id] of [[a, poison], [a, good], [b, other]] as const) {
      expect((await secret(project, "POST", `/campaigns/${id}/send`, {})).status).toBe(200)
    }
    const stats = (project: TestProject, id: string) => secret(project, "GET", `/campaigns/${id}/stats`).then((res) => res.json)
    await eventually(async () => {
      expect(await stats(a, good)).toMatchObject({ status: "SENT", sent: 1 })
      expect(await stats(b, other)).toMatchObject({ status: "SENT", sent: 1 })
    }, 15_000)
    const stopped = await eventually(async () => {
      const res = await stats(a, poison)
      expect(res.status).toBe("CANCELLED")
      return res
    })
    expect(stopped.error).toMatch(/^the campaign stopped: invalid template: /)
  })
})

describe("scheduled campaigns", () => {
  it("cancels a campaign that cannot be started, with the reason; the others due start", async () => {
    const schedule = async (project: TestProject, name: string, from: string) => {
      const created = await secret(project, "POST", "/campaigns", { name, subject: name, body: "<p>x</p>", from, audienceType: "ALL" })
      const id = created.json.data.id as string
      const res = await secret(project, "POST", `/campaigns/${id}/send`, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() })
      expect(res.json.data.status).toBe("SCHEDULED")
      return id
    }
    const poison = await schedule(a, "Poison schedule", "news@a.test")
    const good = await schedule(a, "Good schedule", "news@a.test")
    const other = await schedule(b, "Other schedule", "news@b.test")
    // A timestamp no JavaScript Date can hold (its row fails to decode: the reason names the column); due first of all.
    await query("UPDATE campaigns SET created_at = '-infinity', scheduled_for = now() - interval '1 hour' WHERE id = $1", [poison])
    await query("UPDATE campaigns SET scheduled_for = now() WHERE id = ANY($1::uuid[])", [[good, other]])
    await eventually(async () => {
      const rows = await query<{ id: string; status: string; error: string | null }>(
        "SELECT id, status, error FROM campaigns WHERE id = ANY($1::uuid[])",
        [[poison, good, other]]
      )
      const byId = Object.fromEntries(rows.map((row) => [row.id, row]))
      expect(byId[good]!.status).not.toBe("SCHEDULED")
      expect(byId[other]!.status).not.toBe("SCHEDULED")
      expect(byId[poison]).toMatchObject({
        status: "CANCELLED",
        error: expect.stringMatching(/^the campaign could not be started: [\s\S]*created_at/)
      })
    }, 15_000)
  })
})

describe("segment timers", () => {
  it("drop a timer that cannot be fired (logged); the timers behind it, in its project and another, fire", async () => {
    const condition = {
      logic: "AND",
      groups: [{ filters: [{ field: "event.visit", operator: "triggeredWithin", value: 10, unit: "minutes" }] }]
    }
    const segmentA = (await secret(a, "POST", "/segments", { name: "Visited", condition })).json.id
    const segmentB = (await secret(b, "POST", "/segments", { name: "Visited", condition })).json.id
    const poison = (await track(a, "timer-poison@poison.test", "visit")).contact
    const behind = (await track(a, "timer-behind@poison.test", "visit")).contact
    const other = (await track(b, "timer-other@poison.test", "visit")).contact
    const contacts = [poison, behind, other]
    await eventually(async () => expect(await query("SELECT 1 FROM timers WHERE contact_id = ANY($1::uuid[])", [contacts])).toHaveLength(3))
    // Their visits were 11 minutes ago, and their timers are due: they leave the segments. The poison's
    // timer is due at a time no JavaScript Date can hold, first of all.
    await query(
      "UPDATE event_aggregates SET first_at = first_at - interval '11 minutes', last_at = last_at - interval '11 minutes' WHERE contact_id = ANY($1::uuid[])",
      [contacts]
    )
    await query("UPDATE events SET created_at = created_at - interval '11 minutes' WHERE contact_id = ANY($1::uuid[])", [contacts])
    await query("UPDATE timers SET due_at = now() WHERE contact_id = ANY($1::uuid[])", [[behind, other]])
    await query("UPDATE timers SET due_at = '-infinity' WHERE contact_id = $1", [poison])
    const exited = (segment: string, contact: string) =>
      query<{ exited_at: Date | null }>("SELECT exited_at FROM segment_memberships WHERE segment_id = $1 AND contact_id = $2", [
        segment,
        contact
      ])
        .then((rows) => rows[0]?.exited_at ?? null)
    await eventually(async () => {
      expect(await exited(segmentA, behind)).not.toBeNull()
      expect(await exited(segmentB, other)).not.toBeNull()
      expect(await query("SELECT 1 FROM timers WHERE contact_id = $1", [poison])).toEqual([])
    }, 15_000)
    expect(api.logs.some((line) => line.includes("row set aside") && line.includes(poison) && line.includes("segment timers"))).toBe(true)
  })
})

describe("workflow timers", () => {
  it("fail the execution whose timer cannot be fired, with the reason; the timers behind it fire", async () => {
    const build = (project: TestProject) =>
      buildWorkflow(clientOf(project), {
        name: "Waits",
        eventName: "wait_start",
        first: "wait",
        steps: {
          wait: { type: "WAIT_FOR_EVENT", config: { eventName: "never", timeout: 3_600 }, next: { TIMEOUT: "late" } },
          late: { type: "EXIT", config: { reason: "timed out" } }
        }
      })
    const workflowA = (await build(a)).workflowId
    const workflowB = (await build(b)).workflowId
    await track(a, "wf-poison@poison.test", "wait_start")
    await track(a, "wf-behind@poison.test", "wait_start")
    await track(b, "wf-other@poison.test", "wait_start")
    const waiting = await eventually(async () => {
      const list = [...await executionsOf(clientOf(a), workflowA), ...await executionsOf(clientOf(b), workflowB)]
      expect(list.map((execution) => execution.status)).toEqual(["WAITING", "WAITING", "WAITING"])
      return list
    })
    const contactOf = async (email: string) => (await query<{ id: string }>("SELECT id FROM contacts WHERE email = $1", [email]))[0]!.id
    const poisonContact = await contactOf("wf-poison@poison.test")
    const poison = waiting.find((execution) => execution.contactId === poisonContact)!
    // One statement: set due first and poisoned after, the timer loop could fire the poisoned one in between.
    await query(
      "UPDATE workflow_timers SET due_at = CASE WHEN execution_id = $2 THEN '-infinity'::timestamptz ELSE now() END WHERE execution_id = ANY($1::uuid[])",
      [waiting.map((execution) => execution.id), poison.id]
    )
    await eventually(async () => {
      const list = [...await executionsOf(clientOf(a), workflowA), ...await executionsOf(clientOf(b), workflowB)]
      const byId = Object.fromEntries(list.map((execution) => [execution.id, execution]))
      for (const execution of waiting.filter((candidate) => candidate.id !== poison.id)) {
        expect(byId[execution.id]).toMatchObject({ status: "EXITED", exitReason: "timed out" })
      }
      expect(byId[poison.id]).toMatchObject({
        status: "FAILED",
        error: expect.stringMatching(/^its timer could not be fired: .*Invalid time value/)
      })
    }, 15_000)
    const detail = (await call(clientOf(a), "GET", `/workflows/${workflowA}/executions/${poison.id}`)).json
    expect(detail.steps.find((step: { stepType: string }) => step.stepType === "WAIT_FOR_EVENT")).toMatchObject({
      status: "FAILED",
      error: expect.stringContaining("its timer could not be fired")
    })
  })
})

describe("the webhook runner", () => {
  it("fails a step it cannot perform (its contact's data is unreadable) with the reason; the other steps are performed", async () => {
    const build = (project: TestProject, name: string, path: string) =>
      buildWorkflow(clientOf(project), {
        name,
        eventName: `hook_${name}`,
        first: "hook",
        steps: { hook: { type: "WEBHOOK", config: { url: `http://127.0.0.2:${receiver.port}${path}` } } }
      })
    const poisonFlow = (await build(a, "poison", "/retry")).workflowId
    const goodFlow = (await build(a, "good", "/nul")).workflowId
    const otherFlow = (await build(b, "other", "/ok")).workflowId
    const poisonContact = (await track(a, "hook-poison@poison.test", "hook_poison")).contact
    // Its first attempt is answered 503: while the step waits for its retry, its contact's data goes bad.
    const [step] = await eventually(async () => {
      const rows = await query<{ id: string }>(
        `SELECT s.id FROM workflow_step_executions s JOIN workflow_executions e ON e.id = s.execution_id
         WHERE e.workflow_id = $1 AND s.step_type = 'WEBHOOK' AND s.attempts = 1 AND NOT s.in_flight AND s.status = 'RUNNING'`,
        [poisonFlow]
      )
      expect(rows).toHaveLength(1)
      return rows
    })
    await query(`UPDATE contacts SET data = '"not an object"'::jsonb WHERE id = $1`, [poisonContact])
    await query("UPDATE workflow_step_executions SET next_attempt_at = now() WHERE id = $1", [step!.id])
    await track(a, "hook-good@poison.test", "hook_good")
    await track(b, "hook-other@poison.test", "hook_other")
    await eventually(async () => {
      expect((await executionsOf(clientOf(a), goodFlow)).map((execution) => execution.status)).toEqual(["COMPLETED"])
      expect((await executionsOf(clientOf(b), otherFlow)).map((execution) => execution.status)).toEqual(["COMPLETED"])
      const [poison] = await executionsOf(clientOf(a), poisonFlow)
      expect(poison).toMatchObject({ status: "FAILED", error: expect.stringMatching(/^WEBHOOK step failed: internal error: .*JSON/) })
    }, 20_000)
    // A receiver's answer that Postgres could not store as is (a NUL) is kept without it.
    const [good] = await executionsOf(clientOf(a), goodFlow)
    const detail = (await call(clientOf(a), "GET", `/workflows/${goodFlow}/executions/${good!.id}`)).json
    expect(detail.steps.find((s: { stepType: string }) => s.stepType === "WEBHOOK").output).toMatchObject({ status: 200, body: "ok" })
  })
})

describe("segment backfills", () => {
  it("skip a contact they cannot evaluate (logged) and go on with the contacts behind it", async () => {
    const contact = async (project: TestProject, email: string, data: Record<string, unknown>) =>
      (await secret(project, "POST", "/contacts", { email, data })).json.id as string
    // Ids are time-ordered: the poison sits between two good contacts.
    const first = await contact(a, "bf-first@poison.test", { plan: "gold" })
    const poison = await contact(a, "bf-poison@poison.test", { plan: "gold" })
    const last = await contact(a, "bf-last@poison.test", { plan: "gold" })
    const other = await contact(b, "bf-other@poison.test", { plan: "gold" })
    await query(`UPDATE contacts SET data = '"not an object"'::jsonb WHERE id = $1`, [poison])
    // Time-dependent, so each chunk also reads its contacts' data in memory (for their timers).
    const condition = {
      logic: "AND",
      groups: [{
        filters: [{ field: "data.plan", operator: "equals", value: "gold" }, {
          field: "createdAt",
          operator: "within",
          value: 1,
          unit: "days"
        }]
      }]
    }
    const segmentA = (await secret(a, "POST", "/segments", { name: "Gold", condition })).json.id
    const segmentB = (await secret(b, "POST", "/segments", { name: "Gold", condition })).json.id
    const members = (segment: string) =>
      query<{ contact_id: string }>(
        "SELECT contact_id FROM segment_memberships WHERE segment_id = $1 AND exited_at IS NULL ORDER BY contact_id",
        [segment]
      )
        .then((rows) => rows.map((row) => row.contact_id))
    await eventually(async () => {
      expect(await members(segmentA)).toEqual([first, last])
      expect(await members(segmentB)).toEqual([other])
      // The poison is in a lane of its own: that lane narrows its chunk down to it, then sets it aside.
      expect(api.logs.some((line) => line.includes("row set aside") && line.includes(poison) && line.includes("segment backfill"))).toBe(
        true
      )
    }, 30_000)
  })
})

describe("domain re-checks", () => {
  it("record why a domain cannot be checked, and check the others", async () => {
    const create = async (project: TestProject, domain: string) => {
      const res = await secret(project, "POST", "/domains", { domain })
      expect(res.status).toBe(201)
      return res.json as { id: string; records: Array<{ purpose: string; name: string; value: string }> }
    }
    const poison = await create(a, "poison.test")
    const good = await create(a, "good.test")
    const other = await create(b, "other.test")
    await query("UPDATE domains SET records = '[]'::jsonb, last_checked_at = NULL WHERE id = $1", [poison.id])
    // Published now; only the background re-check (every second here) can verify them.
    for (const domain of [good, other]) {
      const dkim = domain.records.find((record) => record.purpose === "DKIM")!
      mail.dns.addTxt(dkim.name, dkim.value)
    }
    await eventually(async () => {
      const rows = await query<{ id: string; status: string; last_check_error: string | null }>(
        "SELECT id, status, last_check_error FROM domains WHERE id = ANY($1::uuid[])",
        [[poison.id, good.id, other.id]]
      )
      const byId = Object.fromEntries(rows.map((row) => [row.id, row]))
      expect(byId[good.id]).toMatchObject({ status: "VERIFIED", last_check_error: null })
      expect(byId[other.id]).toMatchObject({ status: "VERIFIED", last_check_error: null })
      expect(byId[poison.id]).toMatchObject({ status: "PENDING", last_check_error: expect.any(String) })
    }, 15_000)
  })
})
