/**
 * `npm run bench -- soak`: mixed traffic for BENCH_SOAK_MINUTES (default 30) at half of M2 (a quick M2
 * measured first, or BENCH_SOAK_RATE events/s) on an `api` and two `worker` processes, one worker
 * restarted (SIGTERM, then started again) every BENCH_SOAK_RESTART_MINUTES (default 5), alternately.
 *
 * Traffic: /v1/track (the rate above, 10,000 contacts in 50 segments), contact upserts (POST /contacts),
 * transactional /v1/send, a FILTERED campaign of ~500 recipients every BENCH_SOAK_CAMPAIGN_MINUTES
 * (default 3), a workflow (trigger → DELAY 1 minute → SEND_EMAIL) triggered every second, a 100-row CSV
 * import every 30 s, analytics reads, and BENCH_SOAK_SSE_CLIENTS (default 5) dashboard clients on
 * GET /projects/:id/live with a session. Mail goes to the local SMTP sink.
 *
 * Every BENCH_SOAK_SAMPLE_SECONDS (default 10): RSS (/proc) and V8 heap used (`nodejs_heap_size_used_bytes`
 * from each process's /metrics) of each process, every table's size with its indexes and the database's,
 * every stream's bytes, the track lag (accepted − stored), and p99 per request kind over the window.
 * At the end the regression check (bench/harness/soakCheck.ts) holds the last third against the middle
 * third; any failure makes the run fail (`failures` in the result, exit 1). Samples go into the result
 * JSON, the plot into bench/results/soak-<time>.png.
 */
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { mkdirSync } from "node:fs"
import { Agent, request as httpRequest } from "node:http"
import { Browser, signUp } from "../test/accounts/support.ts"
import { freePort } from "../test/support/mail.ts"
import { openSse, type SseStream } from "../test/support/sse.ts"
import type { Service } from "../test/support/stack.ts"
import { chartSvg, type Panel, renderPng } from "./harness/chart.ts"
import { type MailEnvironment, SENDING_DOMAIN, withMailEnvironment } from "./harness/mail.ts"
import { rssBytes } from "./harness/proc.ts"
import { NATS_URL, ROOT, setting, sleep, waitFor } from "./harness/settings.ts"
import { boundedCheck, type Check, failures, growthCheck, levelCheck, type Point } from "./harness/soakCheck.ts"
import { percentile, round } from "./harness/stats.ts"
import { CONTACTS, createFiftySegments, drained, quickM2, segmentedBody, segmentsBackfilled, touchEveryContact } from "./workload.ts"

const MINUTES = setting("BENCH_SOAK_MINUTES", 30)
const RESTART_MINUTES = setting("BENCH_SOAK_RESTART_MINUTES", 5)
const SAMPLE_SECONDS = setting("BENCH_SOAK_SAMPLE_SECONDS", 10)
const CAMPAIGN_MINUTES = setting("BENCH_SOAK_CAMPAIGN_MINUTES", 3)
const SSE_CLIENTS = setting("BENCH_SOAK_SSE_CLIENTS", 5)
/** Requests per second of the kinds beside /v1/track. */
const RATES = { contact: 10, send: 2, workflow: 1, analytics: 0.5, import: 1 / 30 }
const MiB = 2 ** 20

/** What the regression check allows (the machine is shared: latency is the noisiest). */
export const TOLERANCES = {
  rss: { relative: 0.15, absolute: 32 * MiB },
  heap: { relative: 0.15, absolute: 16 * MiB },
  table: { relative: 0.5, absolute: 4 * MiB },
  /** Lag: a few seconds of the track rate on top (set per run). */
  lagRelative: 0.5,
  lagSeconds: 5,
  p99: { relative: 0.5, absolute: 50 },
  /** Growth a stream without retention limits may show after the warm-up. */
  streamSlack: 8 * MiB,
  /** Share of a kind's requests that may fail (non-2xx or no answer). */
  errorShare: 0.01,
  /** After the load stops the workers apply what is left within this many seconds. */
  catchUpSeconds: 120
}

type Kind = "track" | "contact" | "send" | "workflow" | "analytics" | "import" | "campaign"

interface Sample {
  /** Seconds since the traffic started. */
  readonly t: number
  /** RSS and heap used of each process, bytes (heap undefined when /metrics did not answer). */
  readonly processes: Record<string, { readonly rss: number; readonly heap: number | undefined }>
  /** Total size (heap + indexes + TOAST) and index size of every table, and the database's size. */
  readonly tables: Record<string, { readonly total: number; readonly indexes: number }>
  readonly databaseBytes: number
  readonly streams: Record<string, { readonly bytes: number; readonly messages: number }>
  readonly accepted: number
  readonly stored: number
  readonly lag: number
  /** p99 (ms) of each kind's requests answered in the window; absent when none was. */
  readonly p99: Partial<Record<Kind, number>>
  readonly requests: Partial<Record<Kind, number>>
  readonly sseEvents: number
  readonly mailsArrived: number
}

const agent = new Agent({ keepAlive: true, maxSockets: 128 })

/** One HTTP request over the shared keep-alive agent: status and body text (status 0 when it failed or timed out). */
const call = (url: string, method: string, headers: Record<string, string>, body?: string | Buffer, timeoutMs?: number) =>
  new Promise<{ status: number; text: string }>((resolve) => {
    const req = httpRequest(url, {
      method,
      headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) },
      agent
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => void (text += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
      res.on("error", () => resolve({ status: 0, text }))
    })
    req.on("error", (error) => resolve({ status: 0, text: error.message }))
    if (timeoutMs !== undefined) req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)))
    req.end(body)
  })

/** A set-up request: retried while the service answers 503 (busy, e.g. right after the backfill), for a minute at most. */
const setUp = async (url: string, method: string, headers: Record<string, string>, body?: string) => {
  for (let attempt = 0;; attempt++) {
    const answer = await call(url, method, headers, body)
    if (answer.status < 300) return JSON.parse(answer.text)
    if (answer.status !== 503 || attempt >= 30) throw new Error(`${method} ${url}: ${answer.status} ${answer.text}`)
    await sleep(2_000)
  }
}

/** Latencies and outcomes per kind: a window for the samples, totals for the run. */
const recorder = () => {
  const window = new Map<Kind, Array<number>>()
  const totals = new Map<Kind, { ok: number; failed: number; lastError?: string }>()
  return {
    record(kind: Kind, ms: number, status: number, text: string) {
      const list = window.get(kind) ?? []
      list.push(ms)
      window.set(kind, list)
      const total = totals.get(kind) ?? { ok: 0, failed: 0 }
      if (status >= 200 && status < 300) total.ok++
      else {
        total.failed++
        total.lastError = `${status} ${text.slice(0, 400)}`
      }
      totals.set(kind, total)
    },
    /** p99 and count per kind since the last call. */
    drain() {
      const p99: Partial<Record<Kind, number>> = {}
      const requests: Partial<Record<Kind, number>> = {}
      for (const [kind, list] of window) {
        list.sort((a, b) => a - b)
        p99[kind] = round(percentile(list, 99), 1)
        requests[kind] = list.length
      }
      window.clear()
      return { p99, requests }
    },
    totals
  }
}

/**
 * Fires `fire(n)` at `perSecond` until `stop()` (at most `maxInFlight` outstanding: past it the
 * schedule slips, which the lag and the rate achieved show), recording each answer under `kind`.
 */
const paced = (
  kind: Kind,
  perSecond: number,
  fire: (n: number) => Promise<{ status: number; text: string }>,
  record: ReturnType<typeof recorder>["record"],
  onAnswer?: (status: number) => void,
  maxInFlight = 256
) => {
  let issued = 0
  let inFlight = 0
  const started = performance.now()
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond)
    while (issued < due && inFlight < maxInFlight) {
      const n = issued++
      inFlight++
      const at = performance.now()
      void fire(n).then(({ status, text }) => {
        inFlight--
        record(kind, performance.now() - at, status, text)
        onAnswer?.(status)
      })
    }
  }, 20)
  return {
    issued: () => issued,
    stop: async () => {
      clearInterval(timer)
      await waitFor(() => inFlight === 0, 30_000, 50)
    }
  }
}

/** `nodejs_heap_size_used_bytes` from a Prometheus text page (summed if several processes report). */
export const heapUsedOf = (metrics: string): number | undefined => {
  const values = [...metrics.matchAll(/^nodejs_heap_size_used_bytes(?:\{[^}]*\})?\s+(\S+)/gm)].map((m) => Number(m[1]))
  return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0)
}

const heapOf = async (metricsUrl: string) => {
  // A sample must not wait for a busy process: without an answer in 3 s, no heap figure this time.
  const answer = await call(metricsUrl, "GET", {}, undefined, 3_000)
  return answer.status === 200 ? heapUsedOf(answer.text) : undefined
}

/** A workflow: TRIGGER on `eventName` → the steps in a chain, enabled. */
const chainWorkflow = async (api: string, key: string, name: string, eventName: string, steps: ReadonlyArray<unknown>) => {
  const post = (path: string, body: unknown, method = "POST") =>
    setUp(`${api}${path}`, method, { authorization: `Bearer ${key}`, "content-type": "application/json" }, JSON.stringify(body))
  const workflow = await post("/workflows", { name, eventName, allowReentry: true })
  let from = workflow.steps[0].id as string
  for (const step of steps) {
    const created = await post(`/workflows/${workflow.id}/steps`, step)
    await post(`/workflows/${workflow.id}/transitions`, { fromStepId: from, toStepId: created.id })
    from = created.id
  }
  await post(`/workflows/${workflow.id}`, { enabled: true }, "PATCH")
}

/** A multipart/form-data body with one CSV file field. */
const csvForm = (csv: string) => {
  const boundary = `soak${Math.random().toString(36).slice(2)}`
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="soak.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`
  return { body, contentType: `multipart/form-data; boundary=${boundary}` }
}

/** Stream bytes and limits of this run's streams (named after its NATS prefix). */
const streamsOf = async (jsm: JetStreamManager, prefix: string) => {
  const streams: Record<string, { bytes: number; messages: number; maxBytes: number; maxAgeSeconds: number; maxMessages: number }> = {}
  for await (const info of jsm.streams.list()) {
    if (!info.config.name.includes(prefix)) continue
    streams[info.config.name] = {
      bytes: info.state.bytes,
      messages: info.state.messages,
      maxBytes: info.config.max_bytes,
      maxAgeSeconds: info.config.max_age / 1e9,
      maxMessages: info.config.max_msgs
    }
  }
  return streams
}

const TRACKED_NAMES = ["page_view", "click"]

/** The stored events of the /v1/track load (its event names only: the other traffic stores events too). */
const storedTracked = async (env: MailEnvironment) =>
  Number(
    (await env.query<{ n: string }>("SELECT count(*) AS n FROM events WHERE project_id = $1 AND name = ANY($2)", [
      env.project.id,
      TRACKED_NAMES
    ]))[0]!.n
  )

/** The soak's checks over its samples (exported for the tests: pure). */
export const soakChecks = (
  samples: ReadonlyArray<Sample>,
  streamLimits: Record<string, number | undefined>,
  trackRate: number
): Array<Check> => {
  const run = { start: 0, end: samples.at(-1)?.t ?? 0 }
  const series = (pick: (sample: Sample) => number | undefined): Array<Point> =>
    samples.flatMap((sample) => {
      const value = pick(sample)
      return value === undefined ? [] : [{ t: sample.t, value }]
    })
  const processes = [...new Set(samples.flatMap((sample) => Object.keys(sample.processes)))]
  const tables = Object.keys(samples.at(-1)?.tables ?? {}).filter((table) => samples.at(-1)!.tables[table]!.total > MiB)
  const streams = [...new Set(samples.flatMap((sample) => Object.keys(sample.streams)))]
  const kinds = [...new Set(samples.flatMap((sample) => Object.keys(sample.p99)))] as Array<Kind>
  return [
    ...processes.flatMap((name) => [
      levelCheck(`${name} RSS`, series((s) => s.processes[name]?.rss), run, TOLERANCES.rss, { unit: " B" }),
      levelCheck(`${name} heap used`, series((s) => s.processes[name]?.heap), run, TOLERANCES.heap, { unit: " B" })
    ]),
    ...tables.map((table) => growthCheck(`table ${table}`, series((s) => s.tables[table]?.total), run, TOLERANCES.table, " B")),
    growthCheck("database size", series((s) => s.databaseBytes), run, TOLERANCES.table, " B"),
    ...streams.map((stream) =>
      boundedCheck(
        `stream ${stream}${streamLimits[stream] === undefined ? " (no retention limit)" : ""}`,
        series((s) => s.streams[stream]?.bytes),
        run,
        streamLimits[stream],
        TOLERANCES.streamSlack,
        " B"
      )
    ),
    levelCheck("track lag", series((s) => s.lag), run, { relative: TOLERANCES.lagRelative, absolute: TOLERANCES.lagSeconds * trackRate }, {
      unit: " events"
    }),
    // Kinds with a few requests a window: a p99 there is one request's latency, but a trend still shows.
    ...kinds.filter((kind) => kind !== "campaign" && kind !== "import").map((kind) =>
      levelCheck(`${kind} p99`, series((s) => s.p99[kind]), run, TOLERANCES.p99, { unit: " ms", statistic: "median" })
    )
  ]
}

/** The plot's panels: one per series family, restarts as markers. */
export const panelsOf = (samples: ReadonlyArray<Sample>, restarts: ReadonlyArray<number>): Array<Panel> => {
  // A sample without the figure (a worker being restarted) breaks the line.
  const points = (pick: (sample: Sample) => number | undefined, scale = 1) =>
    samples.map((sample) => ({ t: sample.t, value: (pick(sample) ?? NaN) / scale }))
  // Latency: a window without a request of a rare kind (a campaign, an import) is no gap in its line.
  const answered = (kind: Kind) => points((s) => s.p99[kind]).filter((p) => Number.isFinite(p.value))
  const last = samples.at(-1)!
  const processes = [...new Set(samples.flatMap((sample) => Object.keys(sample.processes)))]
  const tables = Object.entries(last.tables).sort(([, a], [, b]) => b.total - a.total).slice(0, 8).map(([name]) => name)
  const kinds = [...new Set(samples.flatMap((sample) => Object.keys(sample.p99)))] as Array<Kind>
  const markers = { markers: restarts }
  return [
    {
      title: "RSS",
      unit: "MiB",
      series: processes.map((name) => ({ name, points: points((s) => s.processes[name]?.rss, MiB) })),
      ...markers
    },
    {
      title: "V8 heap used",
      unit: "MiB",
      series: processes.map((name) => ({ name, points: points((s) => s.processes[name]?.heap, MiB) })),
      ...markers
    },
    {
      title: "Postgres: largest tables with indexes, and the database",
      unit: "MiB",
      series: [
        { name: "database", points: points((s) => s.databaseBytes, MiB) },
        ...tables.map((name) => ({ name, points: points((s) => s.tables[name]?.total, MiB) }))
      ],
      ...markers
    },
    {
      title: "JetStream storage",
      unit: "MiB",
      series: Object.keys(last.streams).map((name) => ({ name, points: points((s) => s.streams[name]?.bytes, MiB) })),
      ...markers
    },
    { title: "Track lag (accepted − stored)", unit: "events", series: [{ name: "lag", points: points((s) => s.lag) }], ...markers },
    {
      title: `p99 latency per request kind (${SAMPLE_SECONDS} s windows)`,
      unit: "ms",
      series: kinds.map((kind) => ({ name: kind, points: answered(kind) })),
      ...markers
    }
  ]
}

export const run = () =>
  withMailEnvironment(async (env) => {
    const secret = { authorization: `Bearer ${env.project.secretKey}` }
    const json = { "content-type": "application/json" }
    const api = await env.start("api")
    const metricsPorts = [await freePort(), await freePort()]
    const workers: Array<Service> = []
    for (const port of metricsPorts) workers.push(await env.start("worker", { METRICS_PORT: String(port) }))
    await env.verifyDomain(api)

    // 10,000 contacts in 20 cohorts (the campaigns' audiences), in the 50 segments, each with its first event.
    await env.query(
      `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'user' || n || '@bench.test', true, jsonb_build_object('n', n * 6, 'cohort', n % 20), now(), now()
      FROM generate_series(0, $2::int - 1) n`,
      [env.project.id, CONTACTS]
    )
    await createFiftySegments(api.url, env.project.secretKey)
    await touchEveryContact(env, api.url)
    await segmentsBackfilled(env, 180_000)
    const template = await setUp(
      `${api.url}/templates`,
      "POST",
      { ...secret, ...json },
      JSON.stringify({
        name: "Later",
        subject: "A minute later",
        body: "<p>Hi {{ email }}</p>",
        from: `hello@${SENDING_DOMAIN}`,
        type: "TRANSACTIONAL"
      })
    )
    await chainWorkflow(api.url, env.project.secretKey, "Soak", "soak_signup", [
      { type: "DELAY", config: { amount: 1, unit: "minutes" } },
      { type: "SEND_EMAIL", config: { templateId: template.id } },
      { type: "EXIT", config: { reason: "done" } }
    ])
    const m2 = process.env.BENCH_SOAK_RATE ? undefined : await quickM2(env, api.url)
    const trackRate = process.env.BENCH_SOAK_RATE ? setting("BENCH_SOAK_RATE", 0) : Math.max(1, Math.round(m2!.rate / 2))
    await env.query("ANALYZE")

    // Dashboard clients: a user of the project with a session, several tabs of it.
    const { browser, user } = await signUp(api.url, "soak@example.com")
    await env.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'MEMBER') ON CONFLICT DO NOTHING", [
      env.project.id,
      user.id
    ])
    const liveUrl = `${api.url}/projects/${env.project.id}/live`
    let sseEvents = 0
    let sseReconnects = 0
    let stopping = false
    const keepOpen = async (browserSession: Browser) => {
      for (;;) {
        const stream: SseStream = await openSse(liveUrl, { cookie: browserSession.cookieHeader() })
        if (stream.status !== 200) throw new Error(`live: ${stream.status} ${stream.body}`)
        const counter = setInterval(() => void (sseEvents += stream.events.splice(0).length), 1000)
        const stop = setInterval(() => stopping && stream.close(), 200)
        await stream.closed
        clearInterval(counter)
        clearInterval(stop)
        sseEvents += stream.events.splice(0).length
        if (stopping) return
        sseReconnects++
      }
    }
    // What broke a loop of the run (a client refused, a worker that did not start again): a failure of the run.
    const broken: Array<string> = []
    const guard = (what: string, loop: Promise<void>) =>
      loop.catch((error: Error) => void broken.push(`${what}: ${error.message.slice(0, 300)}`))
    const sseClients = Array.from({ length: SSE_CLIENTS }, () => guard("live client", keepOpen(browser)))

    const nc = await connect({ servers: NATS_URL })
    const jsm = await jetstreamManager(nc)
    const trackedBefore = await storedTracked(env)
    const mailsBefore = (await env.sink.stats()).count
    const recording = recorder()
    let accepted = 0
    const started = performance.now()
    const elapsed = () => (performance.now() - started) / 1000

    const publicJson = { authorization: `Bearer ${env.project.publicKey}`, ...json }
    const secretJson = { ...secret, ...json }
    const day = 86_400_000
    const loads = [
      paced(
        "track",
        trackRate,
        (n) => call(`${api.url}/v1/track`, "POST", publicJson, JSON.stringify(segmentedBody(n))),
        recording.record,
        (status) => void (status === 200 && accepted++)
      ),
      paced("contact", RATES.contact, (n) =>
        call(
          `${api.url}/contacts`,
          "POST",
          secretJson,
          JSON.stringify({
            email: `user${(n * 7919) % CONTACTS}@bench.test`,
            data: { n: ((n * 7919) % CONTACTS) * 6, cohort: ((n * 7919) % CONTACTS) % 20, score: n % 100 }
          })
        ), recording.record),
      paced("send", RATES.send, (n) =>
        call(
          `${api.url}/v1/send`,
          "POST",
          secretJson,
          JSON.stringify({
            to: `tx${n % 1000}@example.org`,
            from: `news@${SENDING_DOMAIN}`,
            subject: "Receipt {{ n }}",
            body: "<p>Receipt {{ n }}</p>",
            data: { n }
          })
        ), recording.record),
      paced(
        "workflow",
        RATES.workflow,
        (n) =>
          call(`${api.url}/v1/track`, "POST", publicJson, JSON.stringify({ email: `wf${n % 1000}@example.org`, event: "soak_signup" })),
        recording.record
      ),
      paced("analytics", RATES.analytics, (n) => {
        const range = `from=${new Date(Date.now() - 7 * day).toISOString()}&to=${new Date().toISOString()}&tz=UTC`
        return call(`${api.url}/analytics/${n % 2 ? "overview" : "timeseries"}?${range}`, "GET", secret)
      }, recording.record),
      paced("import", RATES.import, (n) => {
        const rows = Array.from({ length: 100 }, (_, i) => `imp${(n * 100 + i) % 2000}@example.org,${i % 20},pro`)
        const form = csvForm(`email,cohort,plan\n${rows.join("\n")}\n`)
        return call(`${api.url}/contacts/import`, "POST", { ...secret, "content-type": form.contentType }, form.body)
      }, recording.record)
    ]

    // A campaign now and then, to one cohort (~500 recipients).
    const campaigns: Array<string> = []
    const campaignLoop = guard(
      "campaigns",
      (async () => {
        for (let k = 0; !stopping; k++) {
          const at = performance.now()
          const created = await call(
            `${api.url}/campaigns`,
            "POST",
            secretJson,
            JSON.stringify({
              name: `Soak ${k}`,
              subject: "News",
              body: "<p>Hi {{ email }}</p>",
              from: `news@${SENDING_DOMAIN}`,
              audienceType: "FILTERED",
              audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.cohort", operator: "equals", value: k % 20 }] }] }
            })
          )
          if (created.status < 300) {
            const id = JSON.parse(created.text).data.id as string
            const sent = await call(`${api.url}/campaigns/${id}/send`, "POST", secretJson, "{}")
            recording.record("campaign", performance.now() - at, sent.status, sent.text)
            campaigns.push(id)
          } else recording.record("campaign", performance.now() - at, created.status, created.text)
          const next = started + (k + 1) * CAMPAIGN_MINUTES * 60_000
          while (!stopping && performance.now() < next) await sleep(500)
        }
      })()
    )

    // A worker restarted every RESTART_MINUTES, alternately.
    const restarts: Array<{ t: number; worker: string; stopSeconds: number; killed: boolean; startSeconds: number }> = []
    const restartLoop = guard(
      "worker restarts",
      (async () => {
        for (let k = 0;; k++) {
          const next = started + (k + 1) * RESTART_MINUTES * 60_000
          while (!stopping && performance.now() < next) await sleep(500)
          if (stopping) return
          const index = k % workers.length
          const t = elapsed()
          const leaving = workers[index]!
          await leaving.stop("SIGTERM")
          // test/support's stop sends SIGKILL when a graceful stop takes over 15 s.
          const killed = leaving.process.signalCode === "SIGKILL"
          const stopped = elapsed()
          workers[index] = await env.start("worker", { METRICS_PORT: String(metricsPorts[index]) })
          restarts.push({
            t: round(t, 1),
            worker: `worker${index + 1}`,
            stopSeconds: round(stopped - t, 1),
            killed,
            startSeconds: round(elapsed() - stopped, 1)
          })
        }
      })()
    )

    const samples: Array<Sample> = []
    const streamLimits: Record<string, number | undefined> = {}
    const takeSample = async () => {
      const t = round(elapsed(), 1)
      const processes: Sample["processes"] = {}
      const roles: Array<[string, Service, string]> = [
        ["api", api, `${api.url}/metrics`],
        ...workers.map((worker, i): [string, Service, string] => [`worker${i + 1}`, worker, `http://127.0.0.1:${metricsPorts[i]}/metrics`])
      ]
      const [, tableRows, [database], streamInfo, storedNow, sink] = await Promise.all([
        Promise.all(roles.map(async ([name, service, metricsUrl]) => {
          const rss = rssBytes(service.process.pid!)
          // A worker between its SIGTERM and its new start has no figures.
          if (rss > 0) processes[name] = { rss, heap: await heapOf(metricsUrl) }
        })),
        env.query<{ name: string; total: string; indexes: string }>(`
          SELECT c.relname AS name, pg_total_relation_size(c.oid) AS total, pg_indexes_size(c.oid) AS indexes
          FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p') AND s.nspname NOT IN ('pg_catalog', 'information_schema')`),
        env.query<{ bytes: string }>("SELECT pg_database_size(current_database()) AS bytes"),
        streamsOf(jsm, env.natsPrefix),
        storedTracked(env),
        env.sink.stats()
      ])
      const tables = Object.fromEntries(tableRows.map((row) => [row.name, { total: Number(row.total), indexes: Number(row.indexes) }]))
      for (const [name, info] of Object.entries(streamInfo)) {
        streamLimits[name] = info.maxBytes > 0 ? info.maxBytes : undefined
      }
      const stored = storedNow - trackedBefore
      const { p99, requests } = recording.drain()
      samples.push({
        t,
        processes,
        tables,
        databaseBytes: Number(database!.bytes),
        streams: Object.fromEntries(
          Object.entries(streamInfo).map(([name, info]) => [name, { bytes: info.bytes, messages: info.messages }])
        ),
        accepted,
        stored,
        lag: accepted - stored,
        p99,
        requests,
        sseEvents,
        mailsArrived: sink.count - mailsBefore
      })
    }
    const end = started + MINUTES * 60_000
    for (let k = 1; performance.now() < end; k++) {
      await sleep(Math.max(0, Math.min(end, started + k * SAMPLE_SECONDS * 1000) - performance.now()))
      await takeSample()
      const last = samples.at(-1)!
      console.error(
        `soak ${Math.round(last.t)} s: lag ${last.lag}, api rss ${Math.round((last.processes.api?.rss ?? 0) / MiB)} MiB, ` +
          `track p99 ${last.p99.track ?? "-"} ms, db ${Math.round(last.databaseBytes / MiB)} MiB, mails ${last.mailsArrived}`
      )
    }

    stopping = true
    await Promise.all(loads.map((load) => load.stop()))
    await Promise.all([campaignLoop, restartLoop, ...sseClients])
    const stopAt = performance.now()
    const caughtUp = await waitFor(
      async () => (await storedTracked(env)) - trackedBefore >= accepted,
      TOLERANCES.catchUpSeconds * 1000,
      1000
    )
    const catchUpSeconds = round((performance.now() - stopAt) / 1000, 1)
    await drained(env, 30_000)
    const mailsArrived = (await env.sink.stats()).count - mailsBefore
    await nc.close()

    const checks = soakChecks(samples, streamLimits, trackRate)
    const failed = [...failures(checks), ...broken]
    // Thirds of a handful of samples judge nothing (a check without samples in a third passes).
    if (samples.length < 9)
      failed.push(`too few samples to judge: ${samples.length} (a run of a few minutes at least, BENCH_SOAK_SAMPLE_SECONDS apart)`)
    if (!caughtUp)
      failed.push(
        `track lag: ${
          accepted - ((await storedTracked(env)) - trackedBefore)
        } events still not stored ${TOLERANCES.catchUpSeconds} s after the load stopped`
      )
    const totals = Object.fromEntries(recording.totals)
    for (const [kind, total] of recording.totals) {
      if (total.failed > TOLERANCES.errorShare * (total.ok + total.failed)) {
        failed.push(`${kind}: ${total.failed} of ${total.ok + total.failed} requests failed (last: ${total.lastError})`)
      }
    }
    if (SSE_CLIENTS > 0 && sseEvents === 0) failed.push("live: the dashboard clients received no event in the whole run")

    const stamp = new Date().toISOString().replace(/[:.]/g, "-")
    const plot = `bench/results/soak-${stamp}.png`
    const title = `soak: ${MINUTES} min, track ${trackRate}/s (${
      m2 ? "50 % of a quick M2" : "BENCH_SOAK_RATE"
    }), api + 2 workers, a worker restarted every ${RESTART_MINUTES} min (dashed)`
    const svg = chartSvg(title, panelsOf(samples, restarts.map((restart) => restart.t)))
    mkdirSync(`${ROOT}bench/results`, { recursive: true })
    await renderPng(svg, `${ROOT}${plot}`)
    for (const line of failed) console.error(`SOAK REGRESSION: ${line}`)
    console.error(failed.length === 0 ? "soak: no regression" : `soak: ${failed.length} regression(s); plot ${plot}`)
    return {
      description: "Mixed traffic at half of M2 (track, contact upserts, /v1/send, campaigns, workflows with a delay, imports, " +
        "analytics reads, live dashboard clients) on an api and two workers, one restarted every few minutes; " +
        "memory, table and stream sizes, lag and p99 sampled; the last third held against the middle third",
      minutes: MINUTES,
      restartMinutes: RESTART_MINUTES,
      trackRate,
      ...(m2 ? { quickM2: m2 } : {}),
      rates: RATES,
      campaignMinutes: CAMPAIGN_MINUTES,
      sseClients: SSE_CLIENTS,
      accepted,
      caughtUp,
      catchUpSeconds,
      requests: totals,
      campaigns: campaigns.length,
      mailsArrived,
      sse: { events: sseEvents, reconnects: sseReconnects },
      restarts,
      tolerances: TOLERANCES,
      checks,
      failures: failed,
      plot,
      samples
    }
  })
