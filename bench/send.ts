/**
 * `npm run bench -- send`: rendered, tracked, DKIM-signed mail from one project into a local SMTP
 * server (bench/smtpSink.ts, its own process), the throttle off. Baseline: the same mail sent by a bare
 * nodemailer loop in this process (render + sign + pooled SMTP, no queue, no database). Then the
 * throttle's accuracy: a set rate held over BENCH_THROTTLE_SECONDS (default 60).
 */
import { bareSendLoop } from "./baselines/sendLoop.ts"
import { withMailEnvironment } from "./harness/mail.ts"
import { cpuWindow, postgresOf, processesNamed, processTree } from "./harness/proc.ts"
import { setting, sleep } from "./harness/settings.ts"
import { ratio } from "./harness/stats.ts"

export const run = () =>
  withMailEnvironment(async (env) => {
    const total = setting("BENCH_EMAILS", 20_000)
    const api = await env.start("api")
    const worker = await env.start("worker", { METRICS_PORT: "0" })
    const auth = { authorization: `Bearer ${env.project.secretKey}`, "content-type": "application/json" }
    const post = (path: string, body: unknown) =>
      fetch(`${api.url}${path}`, { method: "POST", headers: auth, body: JSON.stringify(body) }).then(async (r) => ({
        status: r.status,
        json: await r.json() as any
      }))
    await env.verifyDomain(api)
    const privateKey = await env.dkimKey()
    const mail = {
      from: { name: "Bench", email: "news@bench.test" },
      subject: 'Hello {{ name ?? "there" }}',
      body:
        '<p>Hi {{ name }}, your plan is {{ plan }}.</p><p><a href="https://bench.test/a">A</a> <a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>'
    }

    // Ours: 100 recipients per request, 8 requests at a time; time from the first request to the last arrival.
    const sendBatch = (batch: number) =>
      post("/v1/send", {
        ...mail,
        to: Array.from({ length: 100 }, (_, i) => ({ name: `User ${i}`, email: `u${batch * 100 + i}@example.org` })),
        data: { plan: "pro" }
      })
    await sendBatch(-1)
    await env.sink.waitForCount(100, 60_000)
    // CPU per email of each part (from /proc): the api renders and queues, the worker composes, signs and sends;
    // Postgres (our database's backends and the server's own processes) and nats-server carry the rows and messages.
    const window = await cpuWindow([
      processTree("api", api.process.pid!),
      processTree("worker", worker.process.pid!),
      postgresOf("postgres", env.query),
      processesNamed("nats", "nats-server")
    ])
    const started = Date.now()
    let next = 0
    let accepted = 0
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < total / 100) {
        const res = await sendBatch(next++)
        if (res.status !== 200) throw new Error(`send answered ${res.status}: ${JSON.stringify(res.json)}`)
      }
      accepted = Date.now() - started
    }))
    const done = await env.sink.waitForCount(total + 100, 600_000)
    const cpu = await window.end(total)
    const serviceSeconds = (done.last! - started) / 1000
    const service = {
      emails: total,
      emailsPerSecond: Math.round(total / serviceSeconds),
      acceptSeconds: accepted / 1000,
      deliverSeconds: serviceSeconds,
      dkimSigned: done.dkimSigned,
      cpuMicrosPerEmail: Object.fromEntries(Object.entries(cpu.groups).map(([name, group]) => [name, group.microsPerEvent]))
    }

    const baseline = await bareSendLoop({ sink: env.sink, key: privateKey, mail, total })

    // Throttle accuracy: the project held to a set rate for a minute.
    const throttleSeconds = setting("BENCH_THROTTLE_SECONDS", 60)
    const rate = setting("BENCH_THROTTLE_RATE", 200)
    await env.query("UPDATE projects SET send_rate_per_second = $1", [rate])
    await sleep(6_000) // the worker reads the rate again within 5 s
    const throttleFrom = (await env.sink.stats()).count
    const batches = Math.ceil((rate * (throttleSeconds + 5)) / 100)
    for (let batch = 0; batch < batches; batch++) {
      const res = await sendBatch(1_000_000 + batch)
      if (res.status !== 200) throw new Error(`send answered ${res.status}`)
    }
    await sleep((throttleSeconds + 2) * 1000)
    const times = (await env.sink.stats(true)).times!.slice(throttleFrom)
    // The window starts a second after the first arrival (past the initial burst).
    const windowStart = times[0]! + 1_000
    const inWindow = times.filter((at) => at >= windowStart && at < windowStart + throttleSeconds * 1000).length
    const measured = inWindow / throttleSeconds
    return {
      description: "Rendered, tracked, DKIM-signed emails from one project into a local SMTP server (throttle off), " +
        "vs a bare nodemailer loop (render + sign + pooled SMTP); then the throttle held at a set rate",
      service,
      baseline,
      ratio: ratio(service.emailsPerSecond, baseline.emailsPerSecond),
      throttle: {
        rate,
        seconds: throttleSeconds,
        measuredPerSecond: Math.round(measured * 100) / 100,
        errorPercent: Math.round(((measured - rate) / rate) * 10_000) / 100
      }
    }
  })
