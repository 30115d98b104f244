/**
 * Benchmarks: `npm run bench -- <name>` (names below). Each one measures our service and a baseline in
 * the same run, on a throw-away database and NATS prefix, and writes bench/results/<name>-<time>.json.
 * The numbers that matter are copied into BENCHMARKS.md together with the machine they ran on.
 */
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import autocannon from "autocannon"
import { spawn, type ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import pg from "pg"

const ROOT = new URL("../", import.meta.url).pathname
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)

interface Result {
  readonly label: string
  readonly requestsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly non2xx: number
  readonly errors: number
}

const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

const deleteStreams = async (prefix: string) => {
  const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
  const jsm = await jetstreamManager(nc)
  for await (const stream of jsm.streams.list()) {
    if (stream.config.name.startsWith(`${prefix}_`)) await jsm.streams.delete(stream.config.name)
  }
  await nc.close()
}

/** Starts a process and resolves with it once a stdout/stderr line matches `ready`. */
const startProcess = (args: Array<string>, env: Record<string, string>, ready: RegExp) =>
  new Promise<{ child: ChildProcess; match: RegExpMatchArray }>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = output.match(ready)
      if (match) resolve({ child, match })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${output}`)))
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const load = async (label: string, url: string, headers: Record<string, string>): Promise<Result> => {
  let counter = 0
  const run = autocannon({
    url,
    method: "POST",
    connections: CONNECTIONS,
    duration: DURATION,
    headers: { "content-type": "application/json", ...headers },
    requests: [{
      setupRequest: (request: any) => {
        counter++
        return { ...request, body: JSON.stringify({ email: `${label}-${counter}@bench.test`, data: { plan: "pro", n: counter } }) }
      }
    }]
  })
  const result = await run
  return {
    label,
    requestsPerSecond: Math.round(result.requests.average),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors
  }
}

const contacts = async () => {
  const suffix = randomBytes(4).toString("hex")
  const database = `ms_bench_${suffix}`
  const databaseUrl = ADMIN_URL.replace(/\/[^/]*$/, `/${database}`)
  await admin(`CREATE DATABASE ${database}`)
  const env = {
    DATABASE_URL: databaseUrl,
    NATS_PREFIX: `bench${suffix}`,
    PORT: "0",
    LOG_LEVEL: "Warn",
    // The limiter stays on (its cost is part of the request path), just out of reach.
    RATE_LIMIT_PER_MINUTE: "100000000"
  }
  const processes: Array<ChildProcess> = []
  try {
    const baseline = await startProcess(["bench/baselines/contactsInsertServer.ts", databaseUrl], {}, /port=(\d+)/)
    processes.push(baseline.child)
    const migrate = await startProcess(["src/main.ts", "migrate"], { ...env, LOG_LEVEL: "Info" }, /database is migrated/)
    await stop(migrate.child)
    const project = await new Promise<{ secretKey: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["src/main.ts", "project", "create", "--name", "bench"], { cwd: ROOT, env: { ...process.env, ...env } })
      let out = ""
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
      child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`project create exited ${code}`))))
    })
    const service = await startProcess(["src/main.ts", "all"], { ...env, LOG_LEVEL: "Info" }, /Listening on http:\/\/[^:]+:(\d+)/)
    processes.push(service.child)

    const baselineUrl = `http://127.0.0.1:${baseline.match[1]}/`
    const serviceUrl = `http://127.0.0.1:${service.match[1]}/contacts`
    // Warm both up (JIT, pools, caches), then measure.
    await load("warmup-baseline", baselineUrl, {})
      .then(() => load("warmup-service", serviceUrl, { authorization: `Bearer ${project.secretKey}` }))
    const baselineResult = await load("baseline", baselineUrl, {})
    const serviceResult = await load("service", serviceUrl, { authorization: `Bearer ${project.secretKey}` })
    return {
      benchmark: "contacts",
      description: "POST /contacts (new email per request) vs a bare node:http + pg server doing one INSERT per request",
      durationSeconds: DURATION,
      connections: CONNECTIONS,
      baseline: baselineResult,
      service: serviceResult,
      ratio: Math.round((serviceResult.requestsPerSecond / baselineResult.requestsPerSecond) * 100) / 100
    }
  } finally {
    await Promise.all(processes.map(stop))
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await deleteStreams(env.NATS_PREFIX)
  }
}

const BENCHMARKS: Record<string, () => Promise<Record<string, unknown>>> = { contacts }

const name = process.argv[2]
const bench = name ? BENCHMARKS[name] : undefined
if (!bench) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHMARKS).join("|")}>`)
  process.exit(2)
}
const result = {
  ...(await bench()),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
  at: new Date().toISOString()
}
mkdirSync(`${ROOT}/bench/results`, { recursive: true })
writeFileSync(`${ROOT}/bench/results/${name}-${result.at.replace(/[:.]/g, "-")}.json`, JSON.stringify(result, null, 2))
console.log(JSON.stringify(result, null, 2))
