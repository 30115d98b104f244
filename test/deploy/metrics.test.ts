/**
 * /metrics from prom-client on real processes: request and batch latency as histograms, Node's process
 * metrics, a standalone worker's METRICS_PORT, and the alert rules in deploy/prometheus/alerts.yml held
 * to the metrics the processes really expose (each expression parsed by Prometheus's PromQL grammar).
 */
import { parser } from "@prometheus-io/lezer-promql"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parse } from "yaml"
import { eventually } from "../support/nats.ts"
import { createMailStack, emailStatus, freePort, type MailStack, verifyDomain } from "../support/mail.ts"
import { request, type Service, type Stack, type TestProject } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const run = promisify(execFile)

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** The Prometheus text format: the families' types and every sample. */
const parseExposition = (text: string) => {
  const types = new Map<string, string>()
  const samples: Array<Sample> = []
  for (const line of text.split("\n")) {
    const type = line.match(/^# TYPE (\S+) (\S+)$/)
    if (type) types.set(type[1]!, type[2]!)
    const sample = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/)
    if (!sample) continue
    const labels = Object.fromEntries([...(sample[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]))
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) })
  }
  return { types, samples }
}

const SERIES_SUFFIXES: Record<string, ReadonlyArray<string>> = {
  counter: [""],
  gauge: [""],
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["", "_sum", "_count"]
}

/** Every series name a query can select, from the families /metrics declares. */
const exposedNames = (types: ReadonlyMap<string, string>) =>
  new Set([...types].flatMap(([name, type]) => (SERIES_SUFFIXES[type] ?? [""]).map((suffix) => name + suffix)))

const find = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))

let mail: MailStack
let stack: Stack
let all: Service
let project: TestProject

const scrape = async (url = `${all.url}/metrics`) => {
  const response = await fetch(url)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/plain")
  return parseExposition(await response.text())
}

beforeAll(async () => {
  mail = await createMailStack()
  stack = mail.stack
  all = await stack.start("all")
  project = await stack.createProject()
  await verifyDomain({ api: all, dns: mail.dns }, project.secretKey, "acme.test")
})
afterAll(async () => {
  await mail?.stop()
})

describe("/metrics", () => {
  it("times every request in a histogram by method, route template and status class", async () => {
    const tracked = await request(all.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "m@example.com", event: "seen" } })
    expect(tracked.status).toBe(200)
    expect((await request(all.url, "GET", "/contacts/0190aaaa-0000-7000-8000-000000000000", { key: project.secretKey })).status).toBe(404)
    expect((await request(all.url, "GET", "/no/such/route")).status).toBe(404)

    const { types, samples } = await scrape()
    const name = "mailstream_http_request_duration_seconds"
    expect(types.get(name)).toBe("histogram")
    const count = (labels: Record<string, string>) => find(samples, `${name}_count`, labels).reduce((sum, sample) => sum + sample.value, 0)
    expect(count({ method: "POST", route: "/v1/track", status: "2xx" })).toBe(1)
    expect(count({ method: "GET", route: "/contacts/:id", status: "4xx" })).toBe(1)
    expect(count({ method: "GET", route: "unmatched", status: "4xx" })).toBe(1)
    // Real buckets: cumulative, ending in +Inf at the count.
    const buckets = find(samples, `${name}_bucket`, { route: "/v1/track", status: "2xx" })
    expect(buckets.length).toBeGreaterThan(10)
    expect(buckets.at(-1)).toMatchObject({ labels: { le: "+Inf" }, value: 1 })
    expect(buckets.map((bucket) => bucket.value)).toEqual([...buckets.map((bucket) => bucket.value)].sort((a, b) => a - b))
  })

  it("observes actor batch durations and sizes in histograms", async () => {
    await request(all.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "batch@example.com", event: "seen" } })
    const { types, samples } = await eventually(async () => {
      const scraped = await scrape()
      expect(find(scraped.samples, "mailstream_actor_batch_seconds_count")[0]?.value).toBeGreaterThan(0)
      return scraped
    })
    expect(types.get("mailstream_actor_batch_seconds")).toBe("histogram")
    expect(types.get("mailstream_actor_batch_size")).toBe("histogram")
    const buckets = find(samples, "mailstream_actor_batch_seconds_bucket")
    expect(buckets.map((bucket) => bucket.labels.le)).toContain("0.01")
    expect(buckets.at(-1)!.value).toBe(find(samples, "mailstream_actor_batch_seconds_count")[0]!.value)
  })

  it("counts mail the relay accepted, transient failures (retried) and failed mail", async () => {
    mail.smtp.failures.set("flaky@example.org", { code: 451, times: 1 })
    mail.smtp.failures.set("rejected@example.org", { code: 550, times: 99 })
    const sent = await request(all.url, "POST", "/v1/send", {
      key: project.secretKey,
      body: {
        to: ["flaky@example.org", "rejected@example.org", "fine@example.org"],
        from: "hello@acme.test",
        subject: "M",
        body: "<p>m</p>"
      }
    })
    expect(sent.status).toBe(200)
    const [flaky, rejected, fine] = sent.json.data.emails.map((email: { email: string }) => email.email)
    await emailStatus({ api: all, project }, rejected, "FAILED")
    await emailStatus({ api: all, project }, fine, "SENT")
    await eventually(() => emailStatus({ api: all, project }, flaky, "SENT"), 15_000)
    // The worker's figures reach the api's /metrics within a couple of seconds (`all` relays them).
    await eventually(async () => {
      const { types, samples } = await scrape()
      expect(types.get("mailstream_email_send_failures_total")).toBe("counter")
      expect(find(samples, "mailstream_emails_sent_total")[0]?.value).toBe(2)
      expect(find(samples, "mailstream_email_send_failures_total", { outcome: "retry" })[0]?.value).toBe(1)
      expect(find(samples, "mailstream_email_send_failures_total", { outcome: "failed" })[0]?.value).toBe(1)
    })
  }, 25_000)

  it("exposes the process's CPU, memory and event-loop lag", async () => {
    const { samples } = await scrape()
    for (
      const name of [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "nodejs_heap_size_used_bytes",
        "nodejs_eventloop_lag_p99_seconds"
      ]
    ) {
      expect(find(samples, name), name).toHaveLength(1)
    }
    expect(find(samples, "process_cpu_seconds_total")[0]!.value).toBeGreaterThan(0)
    expect(find(samples, "process_resident_memory_bytes")[0]!.value).toBeGreaterThan(10 * 1024 * 1024)
  })

  it("is served by a standalone worker on METRICS_PORT, where Compose's worker health check passes", async () => {
    const port = await freePort()
    const worker = await stack.start("worker", { METRICS_PORT: String(port) })
    const { types } = await eventually(() => scrape(`http://127.0.0.1:${port}/metrics`))
    expect(types.get("mailstream_partitions_owned")).toBe("gauge")
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404)

    const compose = parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8"))
    const [kind, command, ...args] = compose.services.worker.healthcheck.test as Array<string>
    expect([kind, command]).toEqual(["CMD", "node"])
    expect(compose.services.worker.environment.METRICS_PORT).toBe("9464")
    const check = (target: number) =>
      run(process.execPath, args.map((arg) => arg.replace("9464", String(target))), { timeout: 10_000 }).then(
        () => 0,
        (error) => error.code
      )
    expect(await check(port)).toBe(0)
    await worker.stop()
    expect(await check(port)).toBe(1)
  })
})

describe("deploy/prometheus/alerts.yml", () => {
  const rules =
    (parse(readFileSync(join(ROOT, "deploy/prometheus/alerts.yml"), "utf8")).groups as Array<{ name: string; rules: Array<any> }>)
      .flatMap((group) => group.rules)

  /** The metric names an expression selects, or the parse errors' positions. */
  const selectedMetrics = (expr: string) => {
    const names: Array<string> = []
    const errors: Array<number> = []
    const cursor = parser.parse(expr).cursor()
    do {
      if (cursor.type.isError) errors.push(cursor.from)
      const identifier = cursor.type.name === "VectorSelector" ? cursor.node.getChild("Identifier") : null
      if (identifier) names.push(expr.slice(identifier.from, identifier.to))
    } while (cursor.next())
    return { names, errors }
  }

  it("has well-formed rules with a severity and a summary", () => {
    expect(rules.length).toBeGreaterThan(5)
    expect(new Set(rules.map((rule) => rule.alert)).size).toBe(rules.length)
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^Mailstream\w+$/)
      expect(["warning", "critical"]).toContain(rule.labels?.severity)
      expect(typeof rule.annotations?.summary).toBe("string")
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/)
    }
  })

  it("parses every expression and names only metrics /metrics exposes", async () => {
    const { types } = await scrape()
    const exposed = exposedNames(types)
    const used = new Set<string>()
    for (const rule of rules) {
      const { names, errors } = selectedMetrics(rule.expr)
      expect(errors, `${rule.alert}: ${rule.expr}`).toEqual([])
      expect(names.length, rule.alert).toBeGreaterThan(0)
      for (const name of names) {
        expect(exposed.has(name), `${rule.alert} selects ${name}, which /metrics does not expose`).toBe(true)
        used.add(name)
      }
    }
    // The four: partition lag, dead letters, send failures, lease churn.
    for (
      const name of [
        "mailstream_partition_lag",
        "mailstream_messages_dead_lettered_total",
        "mailstream_email_send_failures_total",
        "mailstream_partitions_acquired_total"
      ]
    ) {
      expect(used).toContain(name)
    }
  })

  it("catches an expression that names a metric nobody exposes, or does not parse", () => {
    expect(selectedMetrics("rate(mailstream_no_such_total[5m]) > 0").names).toEqual(["mailstream_no_such_total"])
    expect(selectedMetrics("sum(rate(mailstream_partition_lag[5m]) > ").errors.length).toBeGreaterThan(0)
  })
})
