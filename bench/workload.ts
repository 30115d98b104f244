/**
 * The /v1/track workload of `track` and `segments`: one project, 10,000 distinct contacts, custom data
 * on every event; the 50 segments of a busy project; sustained load with lag and CPU sampled.
 */
import type { BenchEnvironment } from "./harness/environment.ts"
import { load, type LoadResult } from "./harness/load.ts"
import { cpuWindow, type ProcessGroup } from "./harness/proc.ts"
import { sleep, waitFor } from "./harness/settings.ts"
import { round } from "./harness/stats.ts"

export const CONTACTS = 10_000

/** M1's event: data that changes on every event. */
export const trackBody = (n: number) => ({
  email: `user${n % CONTACTS}@bench.test`,
  event: n % 3 ? "page_view" : "click",
  data: { n, plan: "pro" }
})

/** The event under segments: a contact keeps its data.n (stable membership of the data segments); its events refresh the window ones. */
export const segmentedBody = (n: number) => ({
  email: `user${n % CONTACTS}@bench.test`,
  event: n % 3 ? "page_view" : "click",
  data: { n: (n % CONTACTS) * 6 }
})

/**
 * 50 segments: 49 over `data.n` and the page_view/click windows (1–24 h) that the load touches, and one
 * tracked probe segment (`event.probe triggered`, emitting `segment.probe.entry`).
 */
export const createFiftySegments = async (apiUrl: string, secretKey: string) => {
  const createSegment = async (body: unknown) => {
    const res = await fetch(`${apiUrl}/segments`, {
      method: "POST",
      headers: { authorization: `Bearer ${secretKey}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    if (res.status !== 201) throw new Error(`segment create: ${res.status} ${await res.text()}`)
    return (await res.json()) as { id: string }
  }
  for (let i = 0; i < 49; i++) {
    await createSegment({
      name: `bench ${i}`,
      condition: {
        logic: i % 2 ? "OR" : "AND",
        groups: [{
          filters: [
            { field: "data.n", operator: "greaterThan", value: i * 1000 },
            { field: `event.${i % 3 ? "page_view" : "click"}`, operator: "triggeredWithin", value: 1 + (i % 24), unit: "hours" }
          ]
        }]
      }
    })
  }
  await createSegment({
    name: "probe",
    trackMembership: true,
    condition: { logic: "AND", groups: [{ filters: [{ field: "event.probe", operator: "triggered" }] }] }
  })
}

export const storedEvents = async (env: BenchEnvironment) =>
  Number((await env.query<{ n: string }>("SELECT count(*) AS n FROM events"))[0]!.n)

/** Waits until no event has been stored for a second (the stream is applied); false after `timeoutMs`. */
export const drained = (env: BenchEnvironment, timeoutMs = 120_000) => {
  let last = -1
  return waitFor(
    async () => {
      const now = await storedEvents(env)
      const still = now === last
      last = now
      return still
    },
    timeoutMs,
    1000
  )
}

/** Segment definitions are backfilled by the workers: waits until every one has caught up (false after 60 s). */
export const segmentsBackfilled = (env: BenchEnvironment, timeoutMs = 60_000) =>
  waitFor(
    async () => {
      const [row] = await env.query<{ behind: number }>("SELECT count(*)::int AS behind FROM segments WHERE backfilled_version < version")
      return row!.behind === 0
    },
    timeoutMs,
    500
  ).catch(() => false)

/**
 * One event for every contact (through /v1/track/batch), applied: each contact's first event since the
 * segments were created makes it enter tens of them (their event windows), a one-time burst that a
 * steady-state measurement must not include.
 */
export const touchEveryContact = async (env: BenchEnvironment, apiUrl: string) => {
  for (let first = 0; first < CONTACTS; first += 500) {
    const events = Array.from({ length: Math.min(500, CONTACTS - first) }, (_, i) => segmentedBody(first + i))
    const res = await fetch(`${apiUrl}/v1/track/batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.project.publicKey}`, "content-type": "application/json" },
      body: JSON.stringify({ events })
    })
    if (res.status !== 200) throw new Error(`every contact's first event: ${res.status} ${await res.text()}`)
  }
  await drained(env)
}

/** Segment memberships entered (rows) and exited so far: how much segment churn a run caused. */
export const segmentChanges = async (env: BenchEnvironment) => {
  const [row] = await env.query<{ entered: string; exited: string }>(
    "SELECT count(*) AS entered, count(exited_at) AS exited FROM segment_memberships"
  )
  return Number(row!.entered) + Number(row!.exited)
}

export interface LagSample {
  readonly second: number
  readonly accepted: number
  readonly stored: number
  readonly lag: number
}

export interface Sustained {
  readonly load: LoadResult
  readonly offeredRate: number
  readonly accepted: number
  readonly lagSamples: ReadonlyArray<LagSample>
  /** Between the first and the last sample (the first 3 s are the ramp). */
  readonly window: {
    readonly seconds: number
    readonly acceptedPerSecond: number
    readonly appliedPerSecond: number
    /** Lag growth over the window, events/s: above 2 % of the accepted rate, the workers fall behind. */
    readonly lagGrowthPerSecond: number
    readonly lagGrowing: boolean
    /** CPU of the given process groups over the window, and per event applied in it. */
    readonly cpu?: Awaited<ReturnType<Awaited<ReturnType<typeof cpuWindow>>["end"]>>
  }
  readonly secondsToCatchUpAfterLoad: number
  /**
   * Segment entries and exits per accepted event over the run (until caught up): near 0 once every
   * contact is in its segments; tens while the contacts' first events after the segments were created
   * make them enter (each entry a membership row, its count and timers, and its workflow triggers).
   */
  readonly segmentChangesPerEvent: number
}

/**
 * `/v1/track` at a fixed offered rate for `seconds`, accepted − stored sampled every 3 s, the CPU of
 * `groups` measured from the first sample to the last; then the time until the workers caught up
 * (≥ 99 % of the accepted events stored, at most 60 s).
 */
export const sustain = async (env: BenchEnvironment, url: string, options: {
  readonly rate: number
  readonly seconds: number
  readonly body: (n: number) => unknown
  readonly groups?: ReadonlyArray<ProcessGroup>
}): Promise<Sustained> => {
  const startCount = await storedEvents(env)
  const startChanges = await segmentChanges(env)
  let accepted = 0
  const started = performance.now()
  const running = load("sustained", url, {
    body: options.body,
    headers: { authorization: `Bearer ${env.project.publicKey}` },
    rate: options.rate,
    duration: options.seconds,
    onResponse: (status) => {
      if (status === 200) accepted++
    }
  })
  const samples: Array<LagSample> = []
  let window: Awaited<ReturnType<typeof cpuWindow>> | undefined
  let cpu: Sustained["window"]["cpu"]
  const sampler = (async () => {
    const last = Math.floor(options.seconds / 3) * 3
    for (let second = 3; second <= last; second += 3) {
      await sleep(Math.max(0, started + second * 1000 - performance.now()))
      const stored = (await storedEvents(env)) - startCount
      samples.push({ second, accepted, stored, lag: accepted - stored })
      if (options.groups && second === 3) window = await cpuWindow(options.groups)
      if (window && second === last && samples.length > 1) cpu = await window.end(stored - samples[0]!.stored)
    }
  })()
  const result = await running
  await sampler
  const total = accepted
  const catchUpStart = performance.now()
  await waitFor(async () => (await storedEvents(env)) - startCount >= total * 0.99, 60_000)
  const first = samples[0]
  const last = samples.at(-1)
  const seconds = first && last ? last.second - first.second : 0
  const perSecond = (a: number, b: number) => (seconds > 0 ? round((a - b) / seconds) : NaN)
  const acceptedPerSecond = first && last ? perSecond(last.accepted, first.accepted) : NaN
  const lagGrowthPerSecond = first && last ? perSecond(last.lag, first.lag) : NaN
  return {
    load: result,
    offeredRate: options.rate,
    accepted: total,
    lagSamples: samples,
    window: {
      seconds,
      acceptedPerSecond,
      appliedPerSecond: first && last ? perSecond(last.stored, first.stored) : NaN,
      lagGrowthPerSecond,
      lagGrowing: lagGrowthPerSecond > 0.02 * acceptedPerSecond,
      ...(cpu ? { cpu } : {})
    },
    secondsToCatchUpAfterLoad: round((performance.now() - catchUpStart) / 1000, 1),
    segmentChangesPerEvent: total > 0 ? round(((await segmentChanges(env)) - startChanges) / total, 2) : 0
  }
}

const QUICK_M2_SECONDS = 8

/**
 * A quick M2 on the processes a benchmark runs (segments' M5, the soak): /v1/track at full speed for
 * 8 s; the rate that is both accepted and applied (events stored per second after a 2 s ramp). For the
 * real M2, run `npm run bench -- track m2`.
 */
export const quickM2 = async (env: BenchEnvironment, apiUrl: string) => {
  const auth = { authorization: `Bearer ${env.project.publicKey}` }
  const running = load("quick M2", `${apiUrl}/v1/track`, { body: segmentedBody, headers: auth, duration: QUICK_M2_SECONDS })
  await sleep(2_000)
  const from = await storedEvents(env)
  const fromAt = performance.now()
  await sleep((QUICK_M2_SECONDS - 3) * 1000)
  const applied = ((await storedEvents(env)) - from) / ((performance.now() - fromAt) / 1000)
  const accepted = (await running).requestsPerSecond
  await drained(env)
  return { acceptedPerSecond: accepted, appliedPerSecond: Math.round(applied), rate: Math.round(Math.min(accepted, applied)) }
}
