/**
 * /v1/track load for tests that take a dependency away under it. Clients send each contact's events one
 * after the other with an Idempotency-Key and retry what the api says to retry (503 and 429 after
 * Retry-After, 409 in progress, no answer at all); a probe sends keyless tracks (the fast path), a
 * dashboard read every 100 ms, and /readyz every 100 ms in a loop of its own. Then: every answer was one a client can act on, and every
 * event accepted is stored exactly once, in each contact's order.
 */
import { expect } from "vitest"
import { eventually } from "./nats.ts"
import { readResponse, type Service, type Stack, type TestProject } from "./stack.ts"

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Answer {
  readonly route: string
  /** When the request was sent. */
  readonly sentAt: number
  /** When it was answered. */
  readonly at: number
  readonly status: number
  readonly code: string | undefined
  readonly retryAfter: string | null
}

export interface ReadyProbe {
  readonly at: number
  readonly status: number
  readonly body: any
}

const call = async (url: string, init: RequestInit, route: string, answers: Array<Answer>) => {
  const sentAt = Date.now()
  const { status, json, headers } = await readResponse(await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) }))
  answers.push({ route, sentAt, at: Date.now(), status, code: json?.error?.code, retryAfter: headers.get("retry-after") })
  return { status, json, retryAfter: headers.get("retry-after") }
}

/** Sends one event until the api accepted it (its event id) or refused it for good (undefined). */
const sendUntilAccepted = async (api: Service, project: TestProject, email: string, key: string, seq: number, answers: Array<Answer>) => {
  const body = JSON.stringify({ email, event: "step", data: { seq } })
  const headers = { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json", "idempotency-key": key }
  for (;;) {
    let answer
    try {
      answer = await call(`${api.url}/v1/track`, { method: "POST", headers, body }, "track with key", answers)
    } catch {
      // No answer at all (the connection went away): the key makes the retry safe.
      await sleep(200)
      continue
    }
    if (answer.status === 200) return answer.json.data.event as string
    const details = answer.json?.error?.details
    if (answer.status === 409 && details?.inProgress === false) return details.originalResponse.data.event as string
    const retry = answer.status === 503 || answer.status === 429 || (answer.status === 409 && details?.inProgress === true)
    if (!retry) return undefined
    await sleep(Math.min(1_000, Number(answer.retryAfter ?? 1) * 1_000))
  }
}

export interface TrackLoad {
  readonly answers: Array<Answer>
  readonly ready: Array<ReadyProbe>
  /** Event ids accepted, per contact, in the order sent. */
  readonly accepted: Map<number, Array<string>>
  /** Events refused for good (a status no client would retry). */
  readonly lost: Array<string>
  /** Total accepted so far. */
  total(): number
  /** Resolves once every keyed track of the last `ms` was accepted at once (the api recovered). */
  recovered(timeoutMs?: number, ms?: number): Promise<void>
  /** Stops sending and waits for the requests in flight. */
  stop(): Promise<void>
}

export const emailOf = (domain: string, contact: number) => `c${contact}@${domain}`

/** `contacts` clients (one per contact of `domain`) and the probe, running until `stop`. */
export const startTrackLoad = (
  api: Service,
  project: TestProject,
  options: { readonly contacts: number; readonly domain: string }
): TrackLoad => {
  const answers: Array<Answer> = []
  const ready: Array<ReadyProbe> = []
  const accepted = new Map<number, Array<string>>()
  const lost: Array<string> = []
  let loading = true
  const client = async (contact: number) => {
    const ids: Array<string> = []
    accepted.set(contact, ids)
    for (let seq = 1; loading; seq++) {
      const id = await sendUntilAccepted(api, project, emailOf(options.domain, contact), `c${contact}-${seq}`, seq, answers)
      if (id === undefined) lost.push(`c${contact}-${seq}`)
      else ids.push(id)
    }
  }
  const probe = async () => {
    for (let i = 0; loading; i++) {
      await Promise.all([
        call(
          `${api.url}/v1/track`,
          {
            method: "POST",
            headers: { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json" },
            body: JSON.stringify({ email: `probe${i % 3}@${options.domain}`, event: "probe" })
          },
          "track without key",
          answers
        ).catch(() => undefined),
        call(`${api.url}/contacts?limit=1`, { headers: { authorization: `Bearer ${project.secretKey}` } }, "GET /contacts", answers).catch(
          () => undefined
        )
      ])
      await sleep(100)
    }
  }
  // /readyz in a loop of its own: a track call held while NATS is away must not keep it from asking
  // during the fault.
  const readiness = async () => {
    while (loading) {
      await fetch(`${api.url}/readyz`, { signal: AbortSignal.timeout(5_000) })
        .then(async (response) => ready.push({ at: Date.now(), status: response.status, body: await response.json() }))
        .catch(() => undefined)
      await sleep(100)
    }
  }
  const running = [...Array.from({ length: options.contacts }, (_, contact) => client(contact)), probe(), readiness()]
  return {
    answers,
    ready,
    accepted,
    lost,
    total: () => [...accepted.values()].reduce((sum, ids) => sum + ids.length, 0),
    recovered: (timeoutMs = 20_000, ms = 300) =>
      eventually(async () => {
        const recent = answers.filter((answer) => answer.route === "track with key" && answer.at > Date.now() - ms)
        expect(recent.length).toBeGreaterThan(0)
        expect(recent.every((answer) => answer.status === 200)).toBe(true)
      }, timeoutMs),
    async stop() {
      loading = false
      await Promise.all(running)
    }
  }
}

/** What the load's answers were, per route and status, for failure messages. */
export const summarize = (load: TrackLoad, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    ...extra,
    byRoute: Object.entries(Object.groupBy(load.answers, (answer) => `${answer.route} ${answer.status} ${answer.code ?? ""}`))
      .map(([key, list]) => `${key}: ${list!.length}`)
  })

/** Never a 500: a request the service could not serve was a quick 503 with Retry-After; nothing refused for good. */
export const expectRetryableAnswers = (load: TrackLoad, summary: string) => {
  expect(load.answers.filter((answer) => ![200, 409, 429, 503].includes(answer.status)), summary).toEqual([])
  for (const answer of load.answers.filter((answer) => answer.status === 503)) {
    expect(answer, summary).toMatchObject({ code: "SERVICE_UNAVAILABLE", retryAfter: expect.stringMatching(/^[1-9]\d*$/) })
  }
  expect(load.lost, summary).toEqual([])
}

/** Every event accepted is stored once, each contact's events in the order they were sent. */
export const expectStoredExactlyOnce = async (stack: Stack, project: TestProject, load: TrackLoad, domain: string, timeoutMs = 30_000) => {
  const total = load.total()
  await eventually(async () => {
    const [row] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'step'", [
      project.id
    ])
    expect(row!.n).toBe(total)
  }, timeoutMs)
  for (const [contact, ids] of load.accepted) {
    const stored = await stack.query<{ id: string; seq: number }>(
      `SELECT e.id, (e.data->>'seq')::int AS seq FROM events e JOIN contacts c ON c.id = e.contact_id
       WHERE e.project_id = $1 AND c.email = $2 AND e.name = 'step' ORDER BY e.created_at, e.id`,
      [project.id, emailOf(domain, contact)]
    )
    expect(stored.map((row) => row.id)).toEqual(ids)
    expect(stored.map((row) => row.seq)).toEqual(ids.map((_, index) => index + 1))
    const [data] = await stack.query<{ seq: number }>(
      "SELECT (data->>'seq')::int AS seq FROM contacts WHERE project_id = $1 AND email = $2",
      [project.id, emailOf(domain, contact)]
    )
    expect(data!.seq).toBe(ids.length)
  }
  return total
}
