/**
 * `npm run bench -- destinations [parts]`. (1) Latency: tracked events at BENCH_RATE (default 1,000) events/s
 * for BENCH_DURATION seconds (default 10), each timed from its /v1/track/batch request to its arrival at a
 * local receiver, in three phases of one run, one after the other (each drained before the next starts),
 * each on its own event name and its own BENCH_CONTACTS contacts (default one per event):
 *   (a) `destination`: an event destination subscribed to the event, nothing else: the target's figure;
 *   (b) `webhook`: the baseline, a workflow triggered by the event whose WEBHOOK step posts to the receiver,
 *       nothing else, at the same rate: what the target is judged against;
 *   (c) `beside`: both on the same event, in the same worker at the same time (an extra figure: the
 *       destination while the workflow engine is saturated beside it).
 * p50/p90/p99/max per path and phase; for the destination also its stages (event → recorded, recorded →
 * settled, from its delivery rows) and (a)'s p50 per second of sending. (2) Throughput per endpoint:
 * BENCH_BURST (default 10,000) events tracked as fast as the api takes them, all to one destination;
 * deliveries per second it receives (first to last arrival). `parts` (comma-separated, default
 * `destination,webhook,beside,throughput`) runs a subset; BENCH_DESTINATIONS_BASELINE=0 is
 * `destination,throughput`. DESTINATION_CONCURRENCY and DESTINATION_DB_CONNECTIONS, when set, go to the worker.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg } from "node:os"
import { withEnvironment } from "./harness/environment.ts"
import { DURATION, setting, sleep, waitFor } from "./harness/settings.ts"
import { percentile } from "./harness/stats.ts"

/** A local receiver: every request's arrival time, keyed by its path. */
const startReceiver = async () => {
  const arrivals = new Map<string, Array<{ at: number; body: any }>>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const at = Date.now()
      const list = arrivals.get(req.url!) ?? []
      try {
        list.push({ at, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
      } catch {
        list.push({ at, body: undefined })
      }
      arrivals.set(req.url!, list)
      res.writeHead(200)
      res.end("ok")
    })
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    count: (path: string) => arrivals.get(path)?.length ?? 0,
    arrivals: (path: string) => arrivals.get(path) ?? [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** A non-persistent value of the event's data, whichever way it reaches a receiver. */
const valueOf = (field: unknown): number => Number((field as { value?: unknown } | null)?.value ?? field)

const PARTS = ["destination", "webhook", "beside", "throughput"] as const
type Part = (typeof PARTS)[number]
type Phase = Exclude<Part, "throughput">

const load = () => Math.round(loadavg()[0]! * 100) / 100

export const run = (args: ReadonlyArray<string> = []) =>
  withEnvironment(async (env) => {
    const rate = setting("BENCH_RATE", 1000)
    // A contact of its own per event by default: the baseline's workflow runs one execution per contact at a
    // time, so shared contacts would hold its later events back (the destination keeps a contact's order too).
    const contacts = setting("BENCH_CONTACTS", Math.max(500, rate * DURATION))
    const burst = setting("BENCH_BURST", 10_000)
    const named = (args[0] ?? "").split(",").filter((part): part is Part => (PARTS as ReadonlyArray<string>).includes(part))
    const parts = new Set<Part>(
      named.length > 0 ? named : setting("BENCH_DESTINATIONS_BASELINE", 1) === 0 ? ["destination", "throughput"] : PARTS
    )
    const phases = (["destination", "webhook", "beside"] as const).filter((phase) => parts.has(phase))
    const allow = { WEBHOOK_ALLOW_CIDRS: "127.0.0.1/32" }
    const api = await env.start("api", allow)
    const passed: Record<string, string> = {}
    for (const name of ["DESTINATION_CONCURRENCY", "DESTINATION_DB_CONNECTIONS"]) {
      if (process.env[name]) passed[name] = process.env[name]!
    }
    await env.start("worker", { METRICS_PORT: "0", ...allow, ...passed })
    const receiver = await startReceiver()
    try {
      const call = async (method: string, path: string, body?: unknown, key = env.project.secretKey) => {
        const send = () =>
          fetch(`${api.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body)
          })
        // A reused keep-alive connection the api closed meanwhile resets: send again (latency counts it).
        const response = await send().catch(() => sleep(50).then(send)).catch(() => sleep(500).then(send))
        const json = await response.json() as any
        if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`)
        return json
      }
      const track = (events: Array<unknown>) => call("POST", "/v1/track/batch", { events }, env.project.publicKey)

      // Each phase's event: (a) a destination's only, (b) a WEBHOOK workflow's only, (c) both's.
      const eventOf = (phase: Phase) => `bench_${phase}`
      const destinationOn = (phase: Phase) => phase !== "webhook"
      const workflowOn = (phase: Phase) => phase !== "destination"
      for (const phase of phases) {
        if (destinationOn(phase))
          await call("POST", "/destinations", { url: receiver.url(`/${phase}/destination`), events: [eventOf(phase)] })
        if (workflowOn(phase)) {
          const workflow = await call("POST", "/workflows", {
            name: `Webhook baseline (${phase})`,
            eventName: eventOf(phase),
            allowReentry: true
          })
          const step = await call("POST", `/workflows/${workflow.id}/steps`, {
            type: "WEBHOOK",
            config: { url: receiver.url(`/${phase}/workflow`) }
          })
          await call("POST", `/workflows/${workflow.id}/transitions`, { fromStepId: workflow.steps[0].id, toStepId: step.id })
          await call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
        }
      }
      // The contacts exist before the measurement, so it is not about creating them: each phase's own.
      const emailOf = (phase: Phase, i: number) => `${phase}${i % contacts}@bench.test`
      const warmed: ReadonlyArray<Phase> = phases.length > 0 ? phases : ["destination"]
      for (const phase of warmed) {
        for (let i = 0; i < contacts; i += 500) {
          await track(Array.from({ length: Math.min(500, contacts - i) }, (_, j) => ({ email: emailOf(phase, i + j), event: "warm_up" })))
        }
      }
      await waitFor(
        async () => {
          const [row] = await env.query<{ n: number }>(`SELECT count(*)::int AS n FROM contacts WHERE project_id = $1`, [env.project.id])
          return (row?.n ?? 0) >= contacts * warmed.length
        },
        120_000,
        250
      )
      await sleep(2_000)

      const summary = (sorted: Array<number>) => ({
        delivered: sorted.length,
        p50Ms: percentile(sorted, 50),
        p90Ms: percentile(sorted, 90),
        p99Ms: percentile(sorted, 99),
        maxMs: sorted.at(-1)
      })
      const destinationSentAt = (body: any) => valueOf(body?.data?.data?.sentAt)
      const workflowSentAt = (body: any) => valueOf(body?.event?.sentAt)
      const latencies = (path: string, sentAtOf: (body: any) => number) =>
        receiver.arrivals(path).map((arrival) => arrival.at - sentAtOf(arrival.body)).filter(Number.isFinite).sort((a, b) => a - b)

      /** One phase: BENCH_RATE events/s, sent every 20 ms in batches, each event stamped with its batch's send time; then drained. */
      const measure = async (phase: Phase) => {
        const loadAtStart = load()
        const tick = 20
        const perTick = Math.max(1, Math.round((rate * tick) / 1000))
        const ticks = Math.round((DURATION * 1000) / tick)
        let n = 0
        const started = Date.now()
        const inFlight: Array<Promise<unknown>> = []
        for (let t = 0; t < ticks; t++) {
          const due = started + t * tick
          if (due > Date.now()) await sleep(due - Date.now())
          const sentAt = Date.now()
          const events = Array.from({ length: perTick }, () => {
            const i = n++
            return {
              email: emailOf(phase, i),
              event: eventOf(phase),
              data: { n: { value: i, persistent: false }, sentAt: { value: sentAt, persistent: false } }
            }
          })
          inFlight.push(track(events))
        }
        await Promise.all(inFlight)
        const sent = n
        const sendSeconds = (Date.now() - started) / 1000
        const loadAtSent = load()
        const destinationPath = `/${phase}/destination`
        const workflowPath = `/${phase}/workflow`
        const drained = await waitFor(
          () =>
            (!destinationOn(phase) || receiver.count(destinationPath) >= sent) &&
            (!workflowOn(phase) || receiver.count(workflowPath) >= sent),
          300_000,
          250
        )
        const drainSeconds = (Date.now() - started) / 1000
        const result: Record<string, unknown> = {
          events: sent,
          sendSeconds,
          drainSeconds,
          drained,
          loadAverage1m: [loadAtStart, loadAtSent, load()]
        }
        if (destinationOn(phase)) {
          // The destination's p50 per second of sending: a standing offset (flat) or a backlog growing (rising).
          const bySecond: Array<Array<number>> = []
          for (const arrival of receiver.arrivals(destinationPath)) {
            const sentAt = destinationSentAt(arrival.body)
            if (!Number.isFinite(sentAt)) continue
            ;(bySecond[Math.max(0, Math.floor((sentAt - started) / 1000))] ??= []).push(arrival.at - sentAt)
          }
          // Where a delivery spent its time: the event's time → its delivery row recorded (the api, the
          // streams, the worker's consumer) → settled after its attempt (the pump and the endpoint).
          const [stages] = await env.query<Record<string, number>>(
            `
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - event_at))::float8 * 1000 AS "recordedP50Ms",
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - event_at))::float8 * 1000 AS "recordedP99Ms",
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM updated_at - created_at))::float8 * 1000 AS "recordedToSettledP50Ms",
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM updated_at - created_at))::float8 * 1000 AS "recordedToSettledP99Ms"
            FROM destination_deliveries WHERE event_type = $1`,
            [eventOf(phase)]
          )
          result.destination = {
            ...summary(latencies(destinationPath, destinationSentAt)),
            p50MsBySecond: bySecond.map((list) => percentile(list.sort((a, b) => a - b), 50)),
            stages: Object.fromEntries(Object.entries(stages ?? {}).map(([key, value]) => [key, Math.round(Number(value))]))
          }
        }
        if (workflowOn(phase)) result.workflowWebhook = summary(latencies(workflowPath, workflowSentAt))
        // What is left of the phase (settlements, executions finishing) is not the next one's.
        await sleep(3_000)
        return result
      }

      const measured: Partial<Record<Phase, Record<string, any>>> = {}
      for (const phase of phases) measured[phase] = await measure(phase)
      const { destination: alone, webhook, beside } = measured
      const ratio = alone?.destination && webhook?.workflowWebhook
        ? Math.round((alone.destination.p99Ms / webhook.workflowWebhook.p99Ms) * 1000) / 1000
        : undefined

      // (2) A burst to one destination: deliveries per second it receives.
      let throughput: Record<string, unknown> | string = "left out"
      if (parts.has("throughput")) {
        const loadAtStart = load()
        await call("POST", "/destinations", { url: receiver.url("/burst"), events: ["burst_event"] })
        await sleep(500)
        const sends: Array<Promise<unknown>> = []
        for (let i = 0; i < burst; i += 500) {
          sends.push(track(Array.from({ length: Math.min(500, burst - i) }, (_, j) => ({
            email: emailOf(warmed[0]!, i + j),
            event: "burst_event"
          }))))
        }
        await Promise.all(sends)
        await waitFor(() => receiver.count("/burst") >= burst, 300_000, 250)
        const burstArrivals = receiver.arrivals("/burst").map((arrival) => arrival.at)
        const burstSeconds = Math.max(0.001, (Math.max(...burstArrivals) - Math.min(...burstArrivals)) / 1000)
        throughput = {
          events: burst,
          received: burstArrivals.length,
          seconds: burstSeconds,
          deliveriesPerSecond: Math.round(burstArrivals.length / burstSeconds),
          loadAverage1m: [loadAtStart, load()]
        }
      }

      return {
        description: "Event destinations: tracked event → delivered to a local receiver at a steady rate, (a) by a destination " +
          "alone, (b) by a workflow's WEBHOOK step alone (the baseline), (c) by both on the same event in the same worker; " +
          "and one destination's delivery throughput under a burst",
        latency: {
          rate,
          durationSeconds: DURATION,
          // (a): the target's figure, judged against (b).
          destination: alone?.destination ?? "left out",
          destinationPhase: alone === undefined ? undefined : { ...alone, destination: undefined },
          // (b): the baseline, alone, the same events at the same rate.
          baselineWorkflowWebhook: webhook?.workflowWebhook ?? "left out",
          baselinePhase: webhook === undefined ? undefined : { ...webhook, workflowWebhook: undefined },
          destinationP99OverBaselineP99: ratio,
          // (c): both in the same worker at once.
          beside: beside ?? "left out"
        },
        throughput
      }
    } finally {
      await receiver.close()
    }
  })
