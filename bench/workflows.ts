/**
 * `npm run bench -- workflows`. (1) Latency: an event triggers a workflow whose SEND_EMAIL step mails
 * the contact; the time from the track request to the mail's acceptance by the local SMTP server,
 * BENCH_TRIGGERS (default 200) triggers one after another: p50 / p99. (2) Throughput: BENCH_WAITING
 * (default 100,000) executions wait in a DELAY whose timers all come due at the same instant;
 * executions advanced per second from that instant until the last one has finished (DELAY completed,
 * then EXIT).
 */
import { makeLanes, OWNER_LANE } from "../src/stream/lanes.ts"
import { withMailEnvironment } from "./harness/mail.ts"
import { setting, sleep } from "./harness/settings.ts"
import { percentile } from "./harness/stats.ts"

export const run = () =>
  withMailEnvironment(async (env) => {
    const triggers = setting("BENCH_TRIGGERS", 200)
    const waiting = setting("BENCH_WAITING", 100_000)
    const api = await env.start("api")
    await env.start("worker", { METRICS_PORT: "0" })
    const call = (method: string, path: string, body?: unknown, key = env.project.secretKey) =>
      fetch(`${api.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body)
      }).then(async (r) => ({ status: r.status, json: await r.json() as any }))
    await env.verifyDomain(api)
    const template = await call("POST", "/templates", {
      name: "Welcome",
      subject: 'Welcome {{ name ?? "" }}',
      body: "<p>Hi {{ event.plan }}</p>",
      from: "hello@bench.test"
    })
    /** An enabled workflow: TRIGGER → the given steps in a chain. */
    const chain = async (name: string, eventName: string, steps: Array<{ type: string; config: unknown }>) => {
      const workflow = (await call("POST", "/workflows", { name, eventName, allowReentry: true })).json
      let from = workflow.steps[0].id as string
      const ids: Array<string> = []
      for (const step of steps) {
        const created = (await call("POST", `/workflows/${workflow.id}/steps`, step)).json
        await call("POST", `/workflows/${workflow.id}/transitions`, { fromStepId: from, toStepId: created.id })
        ids.push(from = created.id)
      }
      await call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
      return { id: workflow.id as string, ids }
    }
    /** Time from `request` to the next mail's acceptance by the SMTP server, one at a time. */
    const untilArrival = async (what: string, request: () => Promise<{ status: number }>) => {
      const before = (await env.sink.stats()).count
      const started = Date.now()
      const answered = await request()
      if (answered.status !== 200) throw new Error(`${what} answered ${answered.status}`)
      for (let polls = 0; (await env.sink.stats()).count <= before; polls++) {
        if (polls > 10_000) throw new Error(`a ${what} mail never arrived`)
        await sleep(2)
      }
      return (await env.sink.stats(true)).times![before]! - started
    }

    // (1) trigger → SMTP acceptance, one at a time.
    await chain("Welcome", "signed_up", [{ type: "SEND_EMAIL", config: { templateId: template.json.id } }])
    const track = (email: string) =>
      call("POST", "/v1/track", { email, event: "signed_up", subscribed: true, data: { plan: "pro" } }, env.project.publicKey)
    await track("warmup@example.org")
    await env.sink.waitForCount(1, 30_000)
    const latencies: Array<number> = []
    for (let i = 0; i < triggers; i++) latencies.push(await untilArrival("track", () => track(`t${i}@example.org`)))
    latencies.sort((a, b) => a - b)
    // Baseline for (1): the direct path, POST /v1/send → SMTP acceptance, through the same api, worker
    // and sender; the difference is what the event → actor → workflow hop adds.
    const direct: Array<number> = []
    for (let i = 0; i < triggers; i++) {
      direct.push(
        await untilArrival(
          "send",
          () => call("POST", "/v1/send", { to: `d${i}@example.org`, template: template.json.id, data: { plan: "pro" } })
        )
      )
    }
    direct.sort((a, b) => a - b)

    // (2) 100k executions waiting in a DELAY, all due at once.
    const delayed = await chain("Delayed", "never_tracked", [{ type: "DELAY", config: { amount: 1, unit: "days" } }, {
      type: "EXIT",
      config: { reason: "done" }
    }])
    // One worker leases every partition here: any partition fires; the timers go to each contact's lane.
    const partition = makeLanes(setting("LANES_PER_PROJECT", 16), setting("PARTITIONS", 32)).partitionOf(env.project.id, OWNER_LANE)
    await env.query(
      `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'wait' || n || '@example.org', true, '{}'::jsonb, now(), now() FROM generate_series(1, $2::int) n`,
      [env.project.id, waiting]
    )
    await env.query(
      `
      INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context, timer_id, started_at, updated_at)
      SELECT gen_random_uuid(), $1, $2, $3, c.id, 'WAITING', $4, '{}'::jsonb, gen_random_uuid(), now(), now()
      FROM contacts c WHERE c.project_id = $2 AND c.email LIKE 'wait%@example.org'`,
      [delayed.id, env.project.id, partition, delayed.ids[0]]
    )
    await env.query(
      `
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, started_at)
      SELECT gen_random_uuid(), e.id, $2, 'DELAY', e.project_id, e.partition, 'WAITING', now() FROM workflow_executions e WHERE e.workflow_id = $1`,
      [delayed.id, delayed.ids[0]]
    )
    const dueAt = Date.now() + 10_000
    await env.query(
      `
      INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
      SELECT e.id, e.timer_id, e.project_id, e.partition, $2, $3::timestamptz FROM workflow_executions e WHERE e.workflow_id = $1`,
      [delayed.id, delayed.ids[0], new Date(dueAt).toISOString()]
    )
    let firedAt: number | undefined
    for (;;) {
      await sleep(250)
      if (firedAt === undefined && Date.now() >= dueAt) {
        const [left] = await env.query<{ n: number }>("SELECT count(*)::int AS n FROM workflow_timers")
        if (left!.n === 0) firedAt = Date.now()
      }
      const [row] = await env.query<{ active: number }>(
        "SELECT count(*)::int AS active FROM workflow_executions WHERE workflow_id = $1 AND status = 'WAITING'",
        [delayed.id]
      )
      if (row!.active === 0) break
      if (Date.now() - dueAt > 1_800_000) throw new Error(`executions still waiting after 30 minutes: ${row!.active}`)
    }
    const [finished] = await env.query<{ last: Date; exited: number }>(
      "SELECT max(finished_at) AS last, count(*) FILTER (WHERE status = 'EXITED')::int AS exited FROM workflow_executions WHERE workflow_id = $1",
      [delayed.id]
    )
    const seconds = (new Date(finished!.last).getTime() - dueAt) / 1000
    // Baseline for (2): the floor of the same row changes done by Postgres alone, set-wise in one
    // transaction (executions finished, one history row each), with no stream, actor or timers.
    const floorStarted = Date.now()
    await env.query(
      `
      WITH done AS (
        UPDATE workflow_executions SET status = 'EXITED', finished_at = now(), updated_at = now()
        WHERE workflow_id = $1 RETURNING id, project_id, partition
      )
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, started_at)
      SELECT gen_random_uuid(), done.id, gen_random_uuid(), 'EXIT', done.project_id, done.partition, 'COMPLETED', now() FROM done`,
      [delayed.id]
    )
    const floorSeconds = (Date.now() - floorStarted) / 1000
    return {
      description: "Workflows: trigger event → SEND_EMAIL → accepted by a local SMTP server (one at a time); " +
        "executions waiting in a DELAY whose timers all come due at once, advanced (DELAY done, EXIT) per second",
      latency: {
        triggers,
        p50Ms: percentile(latencies, 50),
        p90Ms: percentile(latencies, 90),
        p99Ms: percentile(latencies, 99),
        maxMs: latencies.at(-1),
        baselineSendToSmtp: { p50Ms: percentile(direct, 50), p90Ms: percentile(direct, 90), p99Ms: percentile(direct, 99) }
      },
      delays: {
        waiting,
        exited: finished!.exited,
        timersFiredSeconds: firedAt === undefined ? null : (firedAt - dueAt) / 1000,
        allAdvancedSeconds: seconds,
        executionsAdvancedPerSecond: Math.round(finished!.exited / seconds),
        baselinePostgresAloneSeconds: floorSeconds,
        baselineRowsPerSecond: Math.round(finished!.exited / floorSeconds)
      }
    }
  })
