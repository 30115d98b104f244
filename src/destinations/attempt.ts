/**
 * One delivery attempt to an event destination: the body POSTed through the SSRF guard (safeFetch),
 * signed per Standard Webhooks with the destination's secret (and the previous one during a rotation's
 * overlap), judged into an outcome: a 2xx succeeds; no answer, a timeout or another status is retried
 * with exponential backoff until the delivery's retry period ends, then parked; an address the guard
 * refuses (or a redirect loop) is parked at once: asking again cannot help.
 */
import { safeFetch, type Resolve } from "../lib/safeHttp.ts"
import { signatureHeader } from "../lib/standardWebhooks.ts"
import { storableReason, storableText } from "../lib/isolation.ts"
import type { AttemptOutcome, ClaimedDelivery } from "../store/Destinations.ts"

export const EXCERPT_CHARS = 500
/** Standard Webhooks headers may follow a redirect to another origin: they carry a signature, no secret. */
const SIGNATURE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"]

export interface AttemptOptions {
  readonly resolve: Resolve
  readonly allow: (address: string) => boolean
  readonly timeoutMs: number
  readonly retryBaseMs: number
  readonly retryMaxMs: number
}

/** The wait after the n-th failed attempt: base·2^(n−1), at most `max`, with up to 10 % jitter. */
export const backoffMs = (attempts: number, base: number, max: number): number => {
  const plain = Math.min(max, base * 2 ** Math.min(30, Math.max(0, attempts - 1)))
  return Math.round(plain * (1 + Math.random() * 0.1))
}

export const attemptDelivery = async (delivery: ClaimedDelivery, options: AttemptOptions): Promise<AttemptOutcome> => {
  const timestamp = Math.floor(Date.now() / 1000)
  const started = performance.now()
  const response = await safeFetch({
    url: delivery.url,
    method: "POST",
    headers: {
      "user-agent": "mailstream-destinations/1",
      "content-type": "application/json",
      "webhook-id": delivery.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatureHeader(delivery.secrets, delivery.id, timestamp, delivery.body)
    },
    body: delivery.body,
    timeoutMs: options.timeoutMs,
    maxResponseBytes: 16 * 1024,
    allow: options.allow,
    crossOriginHeaders: SIGNATURE_HEADERS
  }, options.resolve)
  const took = Math.round(performance.now() - started)
  const latencyMs = delivery.test ? took : Math.max(0, Date.now() - delivery.eventAt.getTime())
  const failed = (error: string, statusCode: number | null, excerpt: string | null, final: boolean): AttemptOutcome => {
    const next = new Date(Date.now() + backoffMs(delivery.attempts, options.retryBaseMs, options.retryMaxMs))
    const over = final || delivery.test || next > delivery.retryUntil
    return {
      ok: false,
      final: over,
      statusCode,
      latencyMs: took,
      excerpt,
      error: storableReason(over && !final && !delivery.test ? `${error} (retried for the whole retry period; parked)` : error),
      nextAttemptAt: over ? null : next
    }
  }
  switch (response._tag) {
    case "Blocked":
      return failed(`refused: ${response.reason}`, null, null, true)
    case "Invalid":
      return failed(response.reason, null, null, true)
    case "Failed":
      return failed(response.reason, null, null, false)
    case "Response": {
      const excerpt = storableText(response.body.slice(0, EXCERPT_CHARS))
      if (response.status >= 200 && response.status < 300) {
        return { ok: true, final: true, statusCode: response.status, latencyMs, excerpt, error: null, nextAttemptAt: null }
      }
      return failed(`HTTP ${response.status}`, response.status, excerpt, false)
    }
  }
}
