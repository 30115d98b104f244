/**
 * `npm run bench -- campaigns`: a campaign to BENCH_RECIPIENTS (default 100,000) subscribed contacts
 * into the local SMTP server, the throttle off: the audience's resolution time, mails per second (first
 * to last arrival), and the worker's resident memory sampled through the run (it should stay flat, not
 * grow with the audience). Baseline: the bare render + sign + send loop on 10,000 mails.
 */
import { bareSendLoop } from "./baselines/sendLoop.ts"
import { withMailEnvironment } from "./harness/mail.ts"
import { rssBytes } from "./harness/proc.ts"
import { setting, sleep } from "./harness/settings.ts"
import { ratio } from "./harness/stats.ts"

export const run = () =>
  withMailEnvironment(async (env) => {
    const recipients = setting("BENCH_RECIPIENTS", 100_000)
    const api = await env.start("api")
    const worker = await env.start("worker", { METRICS_PORT: "0" })
    const auth = { authorization: `Bearer ${env.project.secretKey}`, "content-type": "application/json" }
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${api.url}${path}`, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) })
        .then(async (r) => ({ status: r.status, json: await r.json() as any }))
    await env.verifyDomain(api)
    await env.query(
      `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'c' || n || '@example.org', true, jsonb_build_object('name', 'User ' || n), now(), now()
      FROM generate_series(1, $2::int) n`,
      [env.project.id, recipients]
    )
    const mail = { subject: 'News for {{ name ?? "you" }}', body: '<p>Hi {{ name }}</p><p><a href="https://bench.test/a">Read</a></p>' }
    const created = await call("POST", "/campaigns", { name: "Bench", ...mail, from: "news@bench.test", audienceType: "ALL" })
    const id = created.json.data.id

    const rssSamples: Array<{ at: number; sent: number; rssMiB: number }> = []
    const before = (await env.sink.stats()).count
    const sample = () => {
      const pid = worker.process.pid!
      return env.sink.stats().then((stats) =>
        rssSamples.push({ at: Date.now(), sent: stats.count - before, rssMiB: Math.round(rssBytes(pid) / 2 ** 20) })
      )
    }
    await sample()
    const started = Date.now()
    await call("POST", `/campaigns/${id}/send`, {})
    let resolvedAfter: number | undefined
    let queuedAfter: number | undefined
    for (;;) {
      await sleep(500)
      await sample()
      const stats = (await call("GET", `/campaigns/${id}/stats`)).json
      if (stats.resolved && resolvedAfter === undefined)
        resolvedAfter = (Date.parse(stats.resolvedAt) - Date.parse(stats.sendingStartedAt)) / 1000
      if (stats.queued && queuedAfter === undefined) queuedAfter = (Date.now() - started) / 1000
      if (stats.status === "SENT") break
      if (Date.now() - started > 1_800_000) throw new Error(`campaign not done after 30 minutes: ${JSON.stringify(stats)}`)
    }
    const done = await env.sink.stats()
    const firstArrival = (await env.sink.stats(true)).times![before]!
    const seconds = (done.last! - firstArrival) / 1000
    const peak = Math.max(...rssSamples.map((s) => s.rssMiB))
    const at = (share: number) => rssSamples.find((s) => s.sent >= recipients * share)?.rssMiB ?? null
    const baseline = await bareSendLoop({ sink: env.sink, key: await env.dkimKey(), mail, total: 10_000 })
    const service = {
      recipients,
      delivered: done.count - before,
      resolutionSeconds: resolvedAfter,
      allQueuedSeconds: queuedAfter,
      sendSeconds: seconds,
      mailsPerSecond: Math.round((done.count - before) / seconds),
      workerRssMiB: { start: rssSamples[0]!.rssMiB, at10Percent: at(0.1), at50Percent: at(0.5), at90Percent: at(0.9), peak }
    }
    return {
      description: "A MARKETING campaign to every contact (ALL) into a local SMTP server, throttle off: resolution time, " +
        "mails/s, worker memory through the run; baseline: the bare render + sign + send loop (10,000 mails)",
      service,
      baseline,
      ratio: ratio(service.mailsPerSecond, baseline.emailsPerSecond)
    }
  })
