/**
 * `npm run bench -- destinations`. (1) Latency: tracked events at BENCH_RATE (default 1,000) events/s for
 * BENCH_DURATION seconds (default 10), over BENCH_CONTACTS contacts (default one per event), each delivered to a
 * local receiver twice: by an event destination subscribed to the event, and by the baseline, a
 * workflow triggered by the same event whose WEBHOOK step posts to the same receiver. Event → delivery
 * latency (from the moment its /v1/track/batch request was sent to the receiver's arrival), p50/p99
 * per path. (2) Throughput per endpoint: BENCH_BURST (default 10,000) events tracked as fast as the
 * api takes them, all to one destination; deliveries per second it receives (first to last arrival).
 * BENCH_DESTINATIONS_BASELINE=0 leaves the baseline workflow out: the destination measured alone (the default
 * run keeps it, the target's comparison in the same run).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
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

export const run = () =>
  withEnvironment(async (env) => {
    const rate = setting("BENCH_RATE", 1000)
    // A contact of its own per event by default: the baseline's workflow runs one execution per contact at a
    // time, so shared contacts would hold its later events back (the destination keeps a contact's order too).
    const contacts = setting("BENCH_CONTACTS", Math.max(500, rate * DURATION))
    const burst = setting("BENCH_BURST", 10_000)
    const withBaseline = setting("BENCH_DESTINATIONS_BASELINE", 1) !== 0
    const allow = { WEBHOOK_ALLOW_CIDRS: "127.0.0.1/32" }
    const api = await env.start("api", allow)
    // DESTINATION_CONCURRENCY, when set, goes to the worker (attempts in flight per endpoint).
    const concurrency: Record<string, string> = process.env.DESTINATION_CONCURRENCY
      ? { DESTINATION_CONCURRENCY: process.env.DESTINATION_CONCURRENCY }
      : {}
    await env.start("worker", { METRICS_PORT: "0", ...allow, ...concurrency })
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

      // The destination and the baseline workflow, both on `bench_event`.
      await call("POST", "/destinations", { url: receiver.url("/destination"), events: ["bench_event"] })
      if (withBaseline) {
        const workflow = await call("POST", "/workflows", { name: "Webhook baseline", eventName: "bench_event", allowReentry: true })
        const step = await call("POST", `/workflows/${workflow.id}/steps`, { type: "WEBHOOK", config: { url: receiver.url("/workflow") } })
        await call("POST", `/workflows/${workflow.id}/transitions`, { fromStepId: workflow.steps[0].id, toStepId: step.id })
        await call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
      }
      // The contacts exist before the measurement, so it is not about creating them.
      for (let i = 0; i < contacts; i += 500) {
        await track(Array.from({ length: Math.min(500, contacts - i) }, (_, j) => ({ email: `c${i + j}@bench.test`, event: "warm_up" })))
      }
      await sleep(2_000)

      // (1) BENCH_RATE events/s, sent every 20 ms in batches, each event stamped with its batch's send time.
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
            email: `c${i % contacts}@bench.test`,
            event: "bench_event",
            data: { n: { value: i, persistent: false }, sentAt: { value: sentAt, persistent: false } }
          }
        })
        inFlight.push(track(events))
      }
      await Promise.all(inFlight)
      const sent = n
      const sendSeconds = (Date.now() - started) / 1000
      await waitFor(() => receiver.count("/destination") >= sent && (!withBaseline || receiver.count("/workflow") >= sent), 180_000, 250)
      const latencies = (path: string, sentAtOf: (body: any) => number) =>
        receiver.arrivals(path).map((arrival) => arrival.at - sentAtOf(arrival.body)).filter(Number.isFinite).sort((a, b) => a - b)
      const destination = latencies("/destination", (body) => valueOf(body?.data?.data?.sentAt))
      // The destination's p50 per second of sending: a standing offset (flat) or a backlog growing (rising).
      const bySecond: Array<Array<number>> = []
      for (const arrival of receiver.arrivals("/destination")) {
        const sentAt = valueOf(arrival.body?.data?.data?.sentAt)
        if (!Number.isFinite(sentAt)) continue
        const second = Math.max(0, Math.floor((sentAt - started) / 1000))
        ;(bySecond[second] ??= []).push(arrival.at - sentAt)
      }
      const p50BySecond = bySecond.map((list) => percentile(list.sort((a, b) => a - b), 50))
      // Where a destination's delivery spent its time: the event's time → its delivery row recorded (the
      // api, the streams, the worker's consumer) → settled after its attempt (the pump and the endpoint).
      const [stages] = await env.query<Record<string, number>>(`
        SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - event_at))::float8 * 1000 AS "recordedP50Ms",
               percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - event_at))::float8 * 1000 AS "recordedP99Ms",
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM updated_at - created_at))::float8 * 1000 AS "recordedToSettledP50Ms",
               percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM updated_at - created_at))::float8 * 1000 AS "recordedToSettledP99Ms"
        FROM destination_deliveries WHERE event_type = 'bench_event'`)
      const webhook = latencies("/workflow", (body) => valueOf(body?.event?.sentAt))

      // (2) A burst to one destination: deliveries per second it receives.
      await call("POST", "/destinations", { url: receiver.url("/burst"), events: ["burst_event"] })
      await sleep(500)
      const sends: Array<Promise<unknown>> = []
      for (let i = 0; i < burst; i += 500) {
        sends.push(track(Array.from({ length: Math.min(500, burst - i) }, (_, j) => ({
          email: `c${(i + j) % contacts}@bench.test`,
          event: "burst_event"
        }))))
      }
      await Promise.all(sends)
      await waitFor(() => receiver.count("/burst") >= burst, 300_000, 250)
      const burstArrivals = receiver.arrivals("/burst").map((arrival) => arrival.at)
      const burstSeconds = Math.max(0.001, (Math.max(...burstArrivals) - Math.min(...burstArrivals)) / 1000)

      const summary = (sorted: Array<number>) => ({
        delivered: sorted.length,
        p50Ms: percentile(sorted, 50),
        p90Ms: percentile(sorted, 90),
        p99Ms: percentile(sorted, 99),
        maxMs: sorted.at(-1)
      })
      return {
        description: "Event destinations: tracked event → delivered to a local receiver, at a steady rate, against a workflow " +
          "WEBHOOK step on the same event (baseline); and one destination's delivery throughput under a burst",
        latency: {
          rate,
          events: sent,
          sendSeconds,
          destination: {
            ...summary(destination),
            p50MsBySecond: p50BySecond,
            stages: Object.fromEntries(Object.entries(stages ?? {}).map(([key, value]) => [key, Math.round(Number(value))]))
          },
          baselineWorkflowWebhook: withBaseline ? summary(webhook) : "left out (BENCH_DESTINATIONS_BASELINE=0)"
        },
        throughput: {
          events: burst,
          received: burstArrivals.length,
          seconds: burstSeconds,
          deliveriesPerSecond: Math.round(burstArrivals.length / burstSeconds)
        }
      }
    } finally {
      await receiver.close()
    }
  })
