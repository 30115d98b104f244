/**
 * Benchmarks: `npm run bench -- <name>` (names below). Each measures our service and a baseline in the
 * same run, on a throw-away database and NATS prefix, and writes bench/results/<name>-<time>.json.
 * The numbers that matter are copied into BENCHMARKS.md together with the machine they ran on.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { createPrivateKey, randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import pg from "pg"
import { uuidv7 } from "../src/domain/ids.ts"
import { partitionOf } from "../src/stream/subjects.ts"
import { startDnsServer } from "../test/support/dns.ts"

const ROOT = new URL("../", import.meta.url).pathname
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"
const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)

interface LoadResult {
  readonly label: string
  readonly requestsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly non2xx: number
  readonly errors: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const sqlOn = async <T>(url: string, text: string, params: Array<unknown> = []): Promise<Array<T>> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, params)).rows as Array<T>
  } finally {
    await client.end()
  }
}

/** Starts a process and resolves once a stdout/stderr line matches `ready`. */
const startProcess = (args: Array<string>, env: Record<string, string>, ready: RegExp) =>
  new Promise<{ child: ChildProcess; match: RegExpMatchArray }>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = output.match(ready)
      if (match) resolve({ child, match })
      if (output.length > 100_000) output = output.slice(-10_000)
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${output}`)))
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** A throw-away database and NATS prefix with the service's schema, one project, and cleanup. */
const environment = async () => {
  const suffix = randomBytes(4).toString("hex")
  const database = `ms_bench_${suffix}`
  const databaseUrl = ADMIN_URL.replace(/\/[^/]*$/, `/${database}`)
  await sqlOn(ADMIN_URL, `CREATE DATABASE ${database}`)
  const env = {
    DATABASE_URL: databaseUrl,
    NATS_URL,
    NATS_PREFIX: `bench${suffix}`,
    PORT: "0",
    LOG_LEVEL: "Warn",
    // The limiter stays on (its cost is part of the request path), just out of reach.
    RATE_LIMIT_PER_MINUTE: "100000000"
  }
  const processes: Array<ChildProcess> = []
  const migrate = await startProcess(["src/main.ts", "migrate"], { ...env, LOG_LEVEL: "Info" }, /database is migrated/)
  await stop(migrate.child)
  const project = await new Promise<{ id: string; publicKey: string; secretKey: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["src/main.ts", "project", "create", "--name", "bench"], { cwd: ROOT, env: { ...process.env, ...env } })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`project create exited ${code}`))))
  })
  const service = async (role: "api" | "worker" | "all", extraEnv: Record<string, string> = {}) => {
    // BENCH_PROFILE=worker (or api) writes a CPU profile of that role to bench/results/profiles/.
    const profile = process.env.BENCH_PROFILE === role ? ["--cpu-prof", `--cpu-prof-dir=${ROOT}/bench/results/profiles`] : []
    const started = await startProcess(
      [...profile, "src/main.ts", role],
      { ...env, LOG_LEVEL: "Info", ...extraEnv },
      role === "worker" ? /worker started/ : /Listening on http:\/\/[^:]+:(\d+)/
    )
    processes.push(started.child)
    return { child: started.child, url: role === "worker" ? "" : `http://127.0.0.1:${started.match[1]}` }
  }
  const baseline = async () => {
    const started = await startProcess(["bench/baselines/insertServer.ts", databaseUrl], {}, /port=(\d+)/)
    processes.push(started.child)
    return `http://127.0.0.1:${started.match[1]}`
  }
  const cleanup = async () => {
    await Promise.all(processes.map(stop))
    await sqlOn(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    const nc = await connect({ servers: NATS_URL })
    const jsm = await jetstreamManager(nc)
    for await (const stream of jsm.streams.list()) {
      if (stream.config.name.startsWith(`${env.NATS_PREFIX}_`)) await jsm.streams.delete(stream.config.name)
    }
    await nc.close()
  }
  return { env, databaseUrl, project, service, baseline, cleanup, stop }
}

const load = async (label: string, url: string, options: {
  readonly headers?: Record<string, string>
  readonly body: (n: number) => unknown
  readonly duration?: number
  /** Requests per second over all connections (default: as fast as possible). */
  readonly rate?: number
  /** Sees every response (keep it cheap: it runs in the load generator). */
  readonly onResponse?: (status: number, body: string) => void
}): Promise<LoadResult> => {
  let counter = 0
  const result = await autocannon({
    url,
    method: "POST",
    connections: CONNECTIONS,
    duration: options.duration ?? DURATION,
    ...(options.rate ? { overallRate: options.rate } : {}),
    headers: { "content-type": "application/json", ...options.headers },
    requests: [{
      setupRequest: (request: Record<string, unknown>) => ({ ...request, body: JSON.stringify(options.body(++counter)) }),
      ...(options.onResponse ? { onResponse: options.onResponse } : {})
    }]
  })
  return {
    label,
    requestsPerSecond: Math.round(result.requests.average),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors
  }
}

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100

const contacts = async () => {
  const env = await environment()
  try {
    const baselineUrl = await env.baseline()
    const { url } = await env.service("all")
    const body = (label: string) => (n: number) => ({ email: `${label}-${n}@bench.test`, data: { plan: "pro", n } })
    const auth = { authorization: `Bearer ${env.project.secretKey}` }
    // Warm both up (JIT, pools, caches), then measure.
    await load("warmup", baselineUrl, { body: body("wb"), duration: 3 })
    await load("warmup", `${url}/contacts`, { body: body("ws"), headers: auth, duration: 3 })
    const baseline = await load("baseline", baselineUrl, { body: body("b") })
    const service = await load("service", `${url}/contacts`, { body: body("s"), headers: auth })
    return {
      description: "POST /contacts (new email per request) vs a bare node:http + pg server doing one INSERT per request",
      baseline,
      service,
      ratio: ratio(service.requestsPerSecond, baseline.requestsPerSecond)
    }
  } finally {
    await env.cleanup()
  }
}

const storedEvents = async (databaseUrl: string) =>
  Number((await sqlOn<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM events"))[0]!.n)

const track = async () => {
  const env = await environment()
  const EMAILS = 10_000
  const trackBody = (n: number) => ({ email: `user${n % EMAILS}@bench.test`, event: n % 3 ? "page_view" : "click", data: { n, plan: "pro" } })
  const auth = { authorization: `Bearer ${env.project.publicKey}` }
  try {
    const baselineUrl = await env.baseline()
    // M1: ingest alone (no workers competing for the two cores).
    const api = await env.service("api")
    const trackUrl = `${api.url}/v1/track`
    await load("warmup", baselineUrl, { body: trackBody, duration: 3 })
    await load("warmup", trackUrl, { body: trackBody, headers: auth, duration: 5 })
    const baseline = await load("baseline", baselineUrl, { body: trackBody })
    const m1 = await load("track", trackUrl, { body: trackBody, headers: auth })
    const at70 = await load("track@70%", trackUrl, { body: trackBody, headers: auth, rate: Math.round(m1.requestsPerSecond * 0.7) })
    await env.stop(api.child)

    // M6: drain a backlog. Workers are down while the events pile up in stream IN, then one starts.
    const backlog = Number(process.env.BENCH_BACKLOG ?? 100_000)
    const contactId = (await sqlOn<{ id: string }>(env.databaseUrl,
      "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ($1, $2, 'drain@bench.test', true, '{}', now(), now()) RETURNING id",
      [uuidv7(), env.project.id]))[0]!.id
    const nc = await connect({ servers: NATS_URL })
    const js = jetstream(nc)
    const subject = `${env.env.NATS_PREFIX}.in.${partitionOf(env.project.id, 32)}.${env.project.id}.track`
    const perEnvelope = 100
    const at = new Date().toISOString()
    for (let sent = 0; sent < backlog;) {
      const publishes = []
      for (let i = 0; i < 50 && sent < backlog; i++, sent += perEnvelope) {
        const events = Array.from({ length: perEnvelope }, (_, k) => ({
          eventId: uuidv7(), contactId, email: "drain@bench.test", name: "drained", subscribed: null,
          set: {}, remove: [], data: { k: sent + k }, at
        }))
        publishes.push(js.publish(subject, JSON.stringify({ kind: "track", projectId: env.project.id, events }), { msgID: uuidv7() }))
      }
      await Promise.all(publishes)
    }
    await nc.close()
    const before = await storedEvents(env.databaseUrl)
    const drainStart = performance.now()
    const worker = await env.service("worker")
    while ((await storedEvents(env.databaseUrl)) - before < backlog) await sleep(100)
    const drainSeconds = (performance.now() - drainStart) / 1000
    const m6 = { events: backlog, seconds: Math.round(drainSeconds * 10) / 10, eventsPerSecond: Math.round(backlog / drainSeconds) }

    // M2: sustained end to end — api and worker running, a fixed offered rate, lag sampled as we go.
    // First let the worker finish what M1 left in the stream.
    while (true) {
      const before = await storedEvents(env.databaseUrl)
      await sleep(1000)
      if ((await storedEvents(env.databaseUrl)) === before) break
    }
    const api2 = await env.service("api")
    const rate = Number(process.env.BENCH_M2_RATE ?? baseline.requestsPerSecond)
    const startCount = await storedEvents(env.databaseUrl)
    const samples: Array<{ second: number; accepted: number; stored: number; lag: number }> = []
    let accepted = 0
    const sustained = load("sustained", `${api2.url}/v1/track`, {
      body: (n) => {
        accepted = n
        return trackBody(n)
      },
      headers: auth,
      rate,
      duration: 15
    })
    const sampler = (async () => {
      for (let second = 3; second <= 15; second += 3) {
        await sleep(3000)
        const stored = (await storedEvents(env.databaseUrl)) - startCount
        samples.push({ second, accepted, stored, lag: accepted - stored })
      }
    })()
    const m2Load = await sustained
    await sampler
    const target = m2Load.requestsPerSecond * 15
    const catchUpStart = performance.now()
    while ((await storedEvents(env.databaseUrl)) - startCount < target * 0.99 && performance.now() - catchUpStart < 60_000) await sleep(100)
    const catchUpSeconds = Math.round((performance.now() - catchUpStart) / 100) / 10
    await env.stop(worker.child)
    return {
      description: "/v1/track ingest (M1), sustained end to end with workers (M2), backlog drain (M6); baseline = node:http + pg, one INSERT per request",
      baseline,
      m1: { ...m1, ratio: ratio(m1.requestsPerSecond, baseline.requestsPerSecond) },
      m1At70PercentLoad: at70,
      m2: {
        offeredRate: rate,
        achievedRequestsPerSecond: m2Load.requestsPerSecond,
        ratio: ratio(m2Load.requestsPerSecond, baseline.requestsPerSecond),
        latencyP99Ms: m2Load.latencyP99Ms,
        non2xx: m2Load.non2xx,
        lagSamples: samples,
        secondsToCatchUpAfterLoad: catchUpSeconds
      },
      m6
    }
  } finally {
    await env.cleanup()
  }
}

/** Percentile of a sorted list. */
const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const segments = async () => {
  const env = await environment()
  const auth = { authorization: `Bearer ${env.project.publicKey}` }
  const secret = { authorization: `Bearer ${env.project.secretKey}`, "content-type": "application/json" }
  try {
    const api = await env.service("api")
    const worker = await env.service("worker", { METRICS_PORT: "39191" })
    // 50 segments: 49 over data fields and events the background load touches, one tracked probe segment.
    const createSegment = async (body: unknown) => {
      const res = await fetch(`${api.url}/segments`, { method: "POST", headers: secret, body: JSON.stringify(body) })
      if (res.status !== 201) throw new Error(`segment create: ${res.status} ${await res.text()}`)
      return (await res.json()) as { id: string }
    }
    for (let i = 0; i < 49; i++) {
      await createSegment({
        name: `bench ${i}`,
        condition: {
          logic: i % 2 ? "OR" : "AND",
          groups: [{ filters: [
            { field: "data.n", operator: "greaterThan", value: i * 1000 },
            { field: `event.${i % 3 ? "page_view" : "click"}`, operator: "triggeredWithin", value: 1 + (i % 24), unit: "hours" }
          ] }]
        }
      })
    }
    await createSegment({
      name: "probe",
      trackMembership: true,
      condition: { logic: "AND", groups: [{ filters: [{ field: "event.probe", operator: "triggered" }] }] }
    })
    // Latency probe: entry events are read off OUT with a plain subscription as they are published.
    const nc = await connect({ servers: NATS_URL })
    const arrivals = new Map<string, number>()
    const subscription = nc.subscribe(`${env.env.NATS_PREFIX}.out.${env.project.id}.segment.probe.entry`, {
      callback: (_error, message) => {
        const payload = message.json<{ email: string }>()
        arrivals.set(payload.email, performance.now())
      }
    })
    const EMAILS = 10_000
    let round = 0
    /** Background load at `rate`, 200 probes during it; latency = entry on OUT minus the probe's response. */
    const probeAt = async (rate: number) => {
      round++
      const before = await fetch("http://127.0.0.1:39191/metrics").then((r) => r.text()).catch(() => "")
      const background = load("background", `${api.url}/v1/track`, {
        // A contact keeps its data.n (stable membership of the data segments); its events refresh the window ones.
        body: (n) => ({ email: `user${n % EMAILS}@bench.test`, event: n % 3 ? "page_view" : "click", data: { n: (n % EMAILS) * 6 } }),
        headers: auth,
        rate,
        duration: 20
      })
      await sleep(5_000)
      const answered = new Map<string, number>()
      for (let i = 0; i < 200; i++) {
        const email = `probe${round}-${i}@bench.test`
        const res = await fetch(`${api.url}/v1/track`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ email, event: "probe" })
        })
        if (res.status === 200) answered.set(email, performance.now())
        await res.arrayBuffer()
        await sleep(40)
      }
      const backgroundResult = await background
      const deadline = performance.now() + 30_000
      while ([...answered.keys()].some((email) => !arrivals.has(email)) && performance.now() < deadline) await sleep(100)
      const after = await fetch("http://127.0.0.1:39191/metrics").then((r) => r.text()).catch(() => "")
      const metric = (text: string, name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0)
      const delta = (name: string) => metric(after, name) - metric(before, name)
      const latencies = [...answered].flatMap(([email, at]) => {
        const arrived = arrivals.get(email)
        return arrived === undefined ? [] : [Math.max(0, arrived - at)]
      }).sort((a, b) => a - b)
      // Let the worker catch up before the next round.
      await sleep(10_000)
      return {
        backgroundRate: rate,
        background: backgroundResult,
        probes: answered.size,
        entriesSeen: latencies.length,
        latencyP50Ms: Math.round(percentile(latencies, 50) * 10) / 10,
        latencyP99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
        latencyMaxMs: Math.round(percentile(latencies, 100) * 10) / 10,
        worker: {
          batches: delta("mailstream_actor_batch_size_count"),
          meanMessagesPerBatch: Math.round(delta("mailstream_actor_batch_size_sum") / delta("mailstream_actor_batch_size_count")),
          meanBatchMs: Math.round(1000 * delta("mailstream_actor_batch_seconds_sum") / delta("mailstream_actor_batch_size_count")),
          eventsApplied: delta("mailstream_events_applied_total")
        }
      }
    }
    const m5 = await probeAt(Number(process.env.BENCH_M5_RATE ?? 4300))
    const m5Light = await probeAt(Number(process.env.BENCH_M5_LIGHT_RATE ?? 1500))
    subscription.unsubscribe()
    await nc.close()
    await env.stop(worker.child)

    // Incremental evaluation vs full recompute of one segment over 100k contacts.
    await sqlOn(env.databaseUrl, `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'bulk' || i || '@bench.test', true, jsonb_build_object('n', i % 60000), now(), now()
      FROM generate_series(1, 100000) i`, [env.project.id])
    const cost = await measureEvaluationCost(env.databaseUrl, env.project.id, env.env.NATS_PREFIX)
    return {
      description: "M5: /v1/track response → segment.<slug>.entry on OUT, at a background load, 50 segments per project; incremental evaluation vs full recompute",
      m5,
      m5BelowCapacity: m5Light,
      evaluationCost: cost
    }
  } finally {
    await env.cleanup()
  }
}

/** One contact's incremental evaluation (load facts, evaluate the project's 50 segments, write) vs a full recompute. */
const measureEvaluationCost = async (databaseUrl: string, projectId: string, prefix: string) => {
  const { Effect, Redacted, ManagedRuntime } = await import("effect")
  const { PgClient } = await import("@effect/sql-pg")
  const { SqlClient } = await import("effect/sql")
  const { loadSegments, evaluateChanges, emptyChange } = await import("../src/actors/segments.ts")
  const { compileConditionSql } = await import("../src/store/conditionSql.ts")
  const { streamNames } = await import("../src/stream/subjects.ts")
  const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 }))
  try {
    return await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const segments = yield* loadSegments(projectId)
      const ids = (yield* sql<{ id: string }>`SELECT id FROM contacts WHERE project_id = ${projectId} ORDER BY random() LIMIT 200`).map((r) => r.id)
      const context = { projectId, partition: 0, names: streamNames(prefix, 32) }
      const started = performance.now()
      for (const id of ids) {
        yield* sql.withTransaction(
          evaluateChanges(context, segments, new Map([[id, { ...emptyChange(), fields: "all" as const }]]), Date.now())
        )
      }
      const incrementalMs = (performance.now() - started) / ids.length
      const target = segments.ordered[segments.ordered.length - 2]!
      const fullStarted = performance.now()
      const runs = 5
      for (let i = 0; i < runs; i++) {
        yield* sql`SELECT count(*) FROM contacts c WHERE c.project_id = ${projectId} AND ${compileConditionSql(sql, target.condition, Date.now())}`
      }
      const fullMs = (performance.now() - fullStarted) / runs
      return {
        contacts: 100_000,
        segmentsEvaluatedIncrementally: segments.ordered.length,
        incrementalMsPerChange: Math.round(incrementalMs * 100) / 100,
        fullRecomputeMsOneSegment: Math.round(fullMs * 10) / 10,
        ratio: Math.round(fullMs / incrementalMs)
      }
    }))
  } finally {
    await runtime.dispose()
  }
}

/**
 * POST /v1/verify against a DNS server in its own process (bench/dnsServer.ts). Warm: 100 domains,
 * cached after the warm-up, so no DNS per request. Cold: a new domain every request, so four lookups
 * (NS, MX, A, AAAA) per verification. No-DNS: malformed addresses, the endpoint without lookups.
 */
const verify = async () => {
  const env = await environment()
  const dns = await startProcess(["bench/dnsServer.ts"], {}, /port=(\d+)/)
  try {
    const api = await env.service("api", { DNS_SERVERS: `127.0.0.1:${dns.match[1]}` })
    const url = `${api.url}/v1/verify`
    const headers = { authorization: `Bearer ${env.project.secretKey}` }
    // Every answer is checked for an unanswered lookup: a fast result made of timeouts would be no result.
    let timedOut = 0
    let invalid = 0
    const onResponse = (_status: number, body: string) => {
      if (body.includes("timed out")) timedOut++
      if (!body.includes('"valid":true')) invalid++
    }
    const warmBody = (n: number) => ({ email: `user${n}@d${n % 100}.warm.bench.test` })
    await load("warmup", url, { body: warmBody, headers, duration: 3 })
    const warm = await load("warm", url, { body: warmBody, headers, onResponse })
    const warmCheck = { timedOut, invalid }
    timedOut = invalid = 0
    const cold = await load("cold", url, { body: (n) => ({ email: `user@d${n}.cold.bench.test` }), headers, onResponse })
    const coldCheck = { timedOut, invalid }
    const noDns = await load("no-dns", url, { body: (n) => ({ email: `not-an-address-${n}` }), headers })
    return {
      description: "POST /v1/verify: warm DNS cache (100 domains), cold (a new domain per request: NS+MX+A+AAAA), and malformed addresses (no DNS)",
      warm: { ...warm, ...warmCheck },
      cold: { ...cold, ...coldCheck, dnsQueriesPerSecond: cold.requestsPerSecond * 4 },
      noDns
    }
  } finally {
    await stop(dns.child)
    await env.cleanup()
  }
}

const statsOf = async (port: string, withTimes = false) =>
  (await fetch(`http://127.0.0.1:${port}/stats${withTimes ? "?times=1" : ""}`).then((r) => r.json())) as {
    count: number
    first: number | null
    last: number | null
    dkimSigned: number
    times?: Array<number>
  }

const waitForCount = async (port: string, count: number, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const stats = await statsOf(port)
    if (stats.count >= count) return stats
    if (Date.now() > deadline) throw new Error(`only ${stats.count} of ${count} messages arrived`)
    await sleep(100)
  }
}

/**
 * The baseline of the mail benchmarks: the same mail rendered (liquidjs), DKIM-signed and sent over a
 * pooled transport of the same size (nodemailer), 64 in flight, with nothing else: no queue, no database.
 */
const bareSendLoop = async (options: {
  readonly smtpPort: string
  readonly statsPort: string
  readonly key: { readonly key: string; readonly selector: string }
  readonly mail: { readonly subject: string; readonly body: string }
  readonly total: number
}) => {
  const { makeRenderer } = await import("../src/mail/render.ts")
  const nodemailer = (await import("nodemailer")).default
  const renderer = makeRenderer()
  const subject = renderer.compile(options.mail.subject, "text")
  const body = renderer.compile(options.mail.body, "html")
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: Number(options.smtpPort), pool: true, maxConnections: 10, maxMessages: Infinity })
  // Parsed once, as the service does (signing with the PEM text parses it every time).
  const privateKey = createPrivateKey(options.key.key)
  const before = (await statsOf(options.statsPort)).count
  const started = Date.now()
  let sent = 0
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (sent < options.total) {
      const n = sent++
      const variables = { name: `User ${n}`, plan: "pro", email: `b${n}@example.org`, unsubscribeUrl: "https://bench.test/u" }
      await transport.sendMail({
        from: { name: "Bench", address: "news@bench.test" },
        to: `b${n}@example.org`,
        subject: await subject.render(variables),
        html: await body.render(variables),
        dkim: { domainName: "bench.test", keySelector: options.key.selector, privateKey: privateKey as unknown as string }
      })
    }
  }))
  const done = await waitForCount(options.statsPort, before + options.total, 600_000)
  transport.close()
  const seconds = (done.last! - started) / 1000
  return { emails: options.total, emailsPerSecond: Math.round(options.total / seconds), deliverSeconds: seconds }
}

/**
 * Email sending: rendered, tracked, DKIM-signed mail from one project into a local SMTP server
 * (bench/smtpSink.ts, its own process), the throttle off. Baseline: the same mail sent by a bare
 * nodemailer loop in this process (render + sign + pooled SMTP, no queue, no database). Then the
 * throttle's accuracy: a set rate held over BENCH_THROTTLE_SECONDS (default 60).
 */
const send = async () => {
  const env = await environment()
  const sink = await startProcess(["bench/smtpSink.ts"], {}, /smtp=(\d+) stats=(\d+)/)
  const [, smtpPort, statsPort] = sink.match
  const dns = await startDnsServer()
  const total = Number(process.env.BENCH_EMAILS ?? 20_000)
  try {
    const mailEnv = { DNS_SERVERS: dns.address, SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, SEND_RATE_PER_SECOND: "0" }
    const api = await env.service("api", mailEnv)
    await env.service("worker", { ...mailEnv, METRICS_PORT: "0" })
    const auth = { authorization: `Bearer ${env.project.secretKey}`, "content-type": "application/json" }
    const post = (path: string, body: unknown) =>
      fetch(`${api.url}${path}`, { method: "POST", headers: auth, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: await r.json() as any }))
    const domain = await post("/domains", { domain: "bench.test" })
    const dkim = domain.json.records.find((record: { purpose: string }) => record.purpose === "DKIM")
    dns.addTxt(dkim.name, dkim.value)
    await fetch(`${api.url}/domains/${domain.json.id}/verify`, { headers: auth })
    const privateKey = (await sqlOn<{ key: string; selector: string }>(
      env.databaseUrl, "SELECT dkim_private_key AS key, dkim_selector AS selector FROM domains"))[0]!
    const mail = {
      from: { name: "Bench", email: "news@bench.test" },
      subject: "Hello {{ name ?? \"there\" }}",
      body: "<p>Hi {{ name }}, your plan is {{ plan }}.</p><p><a href=\"https://bench.test/a\">A</a> <a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a></p>"
    }

    // Ours: 100 recipients per request, 8 requests at a time; time from the first request to the last arrival.
    const sendBatch = (batch: number) =>
      post("/v1/send", {
        ...mail,
        to: Array.from({ length: 100 }, (_, i) => ({ name: `User ${i}`, email: `u${batch * 100 + i}@example.org` })),
        data: { plan: "pro" }
      })
    await sendBatch(-1)
    await waitForCount(statsPort!, 100, 60_000)
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
    const done = await waitForCount(statsPort!, total + 100, 600_000)
    const serviceSeconds = (done.last! - started) / 1000
    const service = {
      emails: total,
      emailsPerSecond: Math.round(total / serviceSeconds),
      acceptSeconds: accepted / 1000,
      deliverSeconds: serviceSeconds,
      dkimSigned: done.dkimSigned
    }

    const baseline = await bareSendLoop({ smtpPort: smtpPort!, statsPort: statsPort!, key: privateKey, mail, total })

    // Throttle accuracy: the project held to a set rate for a minute.
    const throttleSeconds = Number(process.env.BENCH_THROTTLE_SECONDS ?? 60)
    const rate = Number(process.env.BENCH_THROTTLE_RATE ?? 200)
    await sqlOn(env.databaseUrl, "UPDATE projects SET send_rate_per_second = $1", [rate])
    await sleep(6_000) // the worker reads the rate again within 5 s
    const throttleFrom = (await statsOf(statsPort!)).count
    const batches = Math.ceil((rate * (throttleSeconds + 5)) / 100)
    for (let batch = 0; batch < batches; batch++) {
      const res = await sendBatch(1_000_000 + batch)
      if (res.status !== 200) throw new Error(`send answered ${res.status}`)
    }
    await sleep((throttleSeconds + 2) * 1000)
    const times = (await statsOf(statsPort!, true)).times!.slice(throttleFrom)
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
      throttle: { rate, seconds: throttleSeconds, measuredPerSecond: Math.round(measured * 100) / 100, errorPercent: Math.round(((measured - rate) / rate) * 10_000) / 100 }
    }
  } finally {
    await dns.close()
    await stop(sink.child)
    await env.cleanup()
  }
}

/** Resident memory of a process in MiB (Linux). */
const rssMiB = (pid: number) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    return Math.round(Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) / 1024)
  } catch {
    return 0
  }
}

/**
 * A campaign to BENCH_RECIPIENTS (default 100,000) subscribed contacts into the local SMTP server, the
 * throttle off: the audience's resolution time, mails per second (first to last arrival), and the
 * worker's resident memory sampled through the run (it should stay flat, not grow with the audience).
 * Baseline: the bare render + sign + send loop on 10,000 mails.
 */
const campaigns = async () => {
  const env = await environment()
  const sink = await startProcess(["bench/smtpSink.ts"], {}, /smtp=(\d+) stats=(\d+)/)
  const [, smtpPort, statsPort] = sink.match
  const dns = await startDnsServer()
  const recipients = Number(process.env.BENCH_RECIPIENTS ?? 100_000)
  try {
    const mailEnv = { DNS_SERVERS: dns.address, SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, SEND_RATE_PER_SECOND: "0" }
    const api = await env.service("api", mailEnv)
    const worker = await env.service("worker", { ...mailEnv, METRICS_PORT: "0" })
    const auth = { authorization: `Bearer ${env.project.secretKey}`, "content-type": "application/json" }
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${api.url}${path}`, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) })
        .then(async (r) => ({ status: r.status, json: await r.json() as any }))
    const domain = await call("POST", "/domains", { domain: "bench.test" })
    const dkim = domain.json.records.find((record: { purpose: string }) => record.purpose === "DKIM")
    dns.addTxt(dkim.name, dkim.value)
    await call("GET", `/domains/${domain.json.id}/verify`)
    await sqlOn(env.databaseUrl, `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'c' || n || '@example.org', true, jsonb_build_object('name', 'User ' || n), now(), now()
      FROM generate_series(1, $2::int) n`, [env.project.id, recipients])
    const mail = { subject: "News for {{ name ?? \"you\" }}", body: "<p>Hi {{ name }}</p><p><a href=\"https://bench.test/a\">Read</a></p>" }
    const created = await call("POST", "/campaigns", { name: "Bench", ...mail, from: "news@bench.test", audienceType: "ALL" })
    const id = created.json.data.id

    const rssSamples: Array<{ at: number; sent: number; rssMiB: number }> = []
    const before = (await statsOf(statsPort!)).count
    const sample = () => {
      const pid = worker.child.pid!
      return statsOf(statsPort!).then((stats) => rssSamples.push({ at: Date.now(), sent: stats.count - before, rssMiB: rssMiB(pid) }))
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
      if (stats.resolved && resolvedAfter === undefined) resolvedAfter = (Date.parse(stats.resolvedAt) - Date.parse(stats.sendingStartedAt)) / 1000
      if (stats.queued && queuedAfter === undefined) queuedAfter = (Date.now() - started) / 1000
      if (stats.status === "SENT") break
      if (Date.now() - started > 1_800_000) throw new Error(`campaign not done after 30 minutes: ${JSON.stringify(stats)}`)
    }
    const done = await statsOf(statsPort!)
    const firstArrival = (await statsOf(statsPort!, true)).times![before]!
    const seconds = (done.last! - firstArrival) / 1000
    const peak = Math.max(...rssSamples.map((s) => s.rssMiB))
    const at = (share: number) => rssSamples.find((s) => s.sent >= recipients * share)?.rssMiB ?? null
    const privateKey = (await sqlOn<{ key: string; selector: string }>(
      env.databaseUrl, "SELECT dkim_private_key AS key, dkim_selector AS selector FROM domains"))[0]!
    const baseline = await bareSendLoop({ smtpPort: smtpPort!, statsPort: statsPort!, key: privateKey, mail, total: 10_000 })
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
  } finally {
    await dns.close()
    await stop(sink.child)
    await env.cleanup()
  }
}

/**
 * Workflows. (1) Latency: an event triggers a workflow whose SEND_EMAIL step mails the contact; the
 * time from the track request to the mail's acceptance by the local SMTP server, BENCH_TRIGGERS
 * (default 200) triggers one after another: p50 / p99. (2) Throughput: BENCH_WAITING (default
 * 100,000) executions wait in a DELAY whose timers all come due at the same instant; executions
 * advanced per second from that instant until the last one has finished (DELAY completed, then EXIT).
 */
const workflows = async () => {
  const env = await environment()
  const sink = await startProcess(["bench/smtpSink.ts"], {}, /smtp=(\d+) stats=(\d+)/)
  const [, smtpPort, statsPort] = sink.match
  const dns = await startDnsServer()
  const triggers = Number(process.env.BENCH_TRIGGERS ?? 200)
  const waiting = Number(process.env.BENCH_WAITING ?? 100_000)
  try {
    const mailEnv = { DNS_SERVERS: dns.address, SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, SEND_RATE_PER_SECOND: "0" }
    const api = await env.service("api", mailEnv)
    await env.service("worker", { ...mailEnv, METRICS_PORT: "0" })
    const call = (method: string, path: string, body?: unknown, key = env.project.secretKey) =>
      fetch(`${api.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body)
      }).then(async (r) => ({ status: r.status, json: await r.json() as any }))
    const domain = await call("POST", "/domains", { domain: "bench.test" })
    const dkim = domain.json.records.find((record: { purpose: string }) => record.purpose === "DKIM")
    dns.addTxt(dkim.name, dkim.value)
    await call("GET", `/domains/${domain.json.id}/verify`)
    const template = await call("POST", "/templates", { name: "Welcome", subject: "Welcome {{ name ?? \"\" }}", body: "<p>Hi {{ event.plan }}</p>", from: "hello@bench.test" })
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

    // (1) trigger → SMTP acceptance, one at a time.
    await chain("Welcome", "signed_up", [{ type: "SEND_EMAIL", config: { templateId: template.json.id } }])
    const track = (email: string) =>
      call("POST", "/v1/track", { email, event: "signed_up", subscribed: true, data: { plan: "pro" } }, env.project.publicKey)
    await track("warmup@example.org")
    await waitForCount(statsPort!, 1, 30_000)
    const latencies: Array<number> = []
    for (let i = 0; i < triggers; i++) {
      const before = (await statsOf(statsPort!)).count
      const started = Date.now()
      const tracked = await track(`t${i}@example.org`)
      if (tracked.status !== 200) throw new Error(`track answered ${tracked.status}`)
      for (let polls = 0; (await statsOf(statsPort!)).count <= before; polls++) {
        if (polls > 10_000) throw new Error("a triggered mail never arrived")
        await sleep(2)
      }
      latencies.push((await statsOf(statsPort!, true)).times![before]! - started)
    }
    latencies.sort((a, b) => a - b)
    // Baseline for (1): the direct path, POST /v1/send → SMTP acceptance, through the same api, worker
    // and sender; the difference is what the event → actor → workflow hop adds.
    const direct: Array<number> = []
    for (let i = 0; i < triggers; i++) {
      const before = (await statsOf(statsPort!)).count
      const started = Date.now()
      const sent = await call("POST", "/v1/send", { to: `d${i}@example.org`, template: template.json.id, data: { plan: "pro" } })
      if (sent.status !== 200) throw new Error(`send answered ${sent.status}`)
      for (let polls = 0; (await statsOf(statsPort!)).count <= before; polls++) {
        if (polls > 10_000) throw new Error("a sent mail never arrived")
        await sleep(2)
      }
      direct.push((await statsOf(statsPort!, true)).times![before]! - started)
    }
    direct.sort((a, b) => a - b)

    // (2) 100k executions waiting in a DELAY, all due at once.
    const delayed = await chain("Delayed", "never_tracked", [{ type: "DELAY", config: { amount: 1, unit: "days" } }, { type: "EXIT", config: { reason: "done" } }])
    const { partitionOf } = await import("../src/stream/subjects.ts")
    const partition = partitionOf(env.project.id, Number(process.env.PARTITIONS ?? 32))
    await sqlOn(env.databaseUrl, `
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'wait' || n || '@example.org', true, '{}'::jsonb, now(), now() FROM generate_series(1, $2::int) n`,
      [env.project.id, waiting])
    await sqlOn(env.databaseUrl, `
      INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, context, timer_id, started_at, updated_at)
      SELECT gen_random_uuid(), $1, $2, $3, c.id, 'WAITING', $4, '{}'::jsonb, gen_random_uuid(), now(), now()
      FROM contacts c WHERE c.project_id = $2 AND c.email LIKE 'wait%@example.org'`,
      [delayed.id, env.project.id, partition, delayed.ids[0]])
    await sqlOn(env.databaseUrl, `
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, started_at)
      SELECT gen_random_uuid(), e.id, $2, 'DELAY', e.project_id, e.partition, 'WAITING', now() FROM workflow_executions e WHERE e.workflow_id = $1`,
      [delayed.id, delayed.ids[0]])
    const dueAt = Date.now() + 10_000
    await sqlOn(env.databaseUrl, `
      INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at)
      SELECT e.id, e.timer_id, e.project_id, e.partition, $2, $3::timestamptz FROM workflow_executions e WHERE e.workflow_id = $1`,
      [delayed.id, delayed.ids[0], new Date(dueAt).toISOString()])
    let firedAt: number | undefined
    for (;;) {
      await sleep(250)
      if (firedAt === undefined && Date.now() >= dueAt) {
        const [left] = await sqlOn<{ n: number }>(env.databaseUrl, "SELECT count(*)::int AS n FROM workflow_timers")
        if (left!.n === 0) firedAt = Date.now()
      }
      const [row] = await sqlOn<{ active: number }>(env.databaseUrl,
        "SELECT count(*)::int AS active FROM workflow_executions WHERE workflow_id = $1 AND status = 'WAITING'", [delayed.id])
      if (row!.active === 0) break
      if (Date.now() - dueAt > 1_800_000) throw new Error(`executions still waiting after 30 minutes: ${row!.active}`)
    }
    const [finished] = await sqlOn<{ last: Date; exited: number }>(env.databaseUrl,
      "SELECT max(finished_at) AS last, count(*) FILTER (WHERE status = 'EXITED')::int AS exited FROM workflow_executions WHERE workflow_id = $1",
      [delayed.id])
    const seconds = (new Date(finished!.last).getTime() - dueAt) / 1000
    // Baseline for (2): the floor of the same row changes done by Postgres alone, set-wise in one
    // transaction (executions finished, one history row each), with no stream, actor or timers.
    const floorStarted = Date.now()
    await sqlOn(env.databaseUrl, `
      WITH done AS (
        UPDATE workflow_executions SET status = 'EXITED', finished_at = now(), updated_at = now()
        WHERE workflow_id = $1 RETURNING id, project_id, partition
      )
      INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, started_at)
      SELECT gen_random_uuid(), done.id, gen_random_uuid(), 'EXIT', done.project_id, done.partition, 'COMPLETED', now() FROM done`,
      [delayed.id])
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
  } finally {
    await dns.close()
    await stop(sink.child)
    await env.cleanup()
  }
}

const BENCHMARKS: Record<string, () => Promise<Record<string, unknown>>> = { contacts, track, segments, verify, send, campaigns, workflows }

const name = process.argv[2]
const bench = name ? BENCHMARKS[name] : undefined
if (!bench) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHMARKS).join("|")}>`)
  process.exit(2)
}
const result = {
  benchmark: name,
  ...(await bench()),
  settings: { durationSeconds: DURATION, connections: CONNECTIONS },
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
  at: new Date().toISOString()
}
mkdirSync(`${ROOT}/bench/results`, { recursive: true })
writeFileSync(`${ROOT}/bench/results/${name}-${result.at.replace(/[:.]/g, "-")}.json`, JSON.stringify(result, null, 2))
console.log(JSON.stringify(result, null, 2))
