/**
 * Who may read /metrics (on PORT or on METRICS_PORT): with METRICS_TOKEN, whoever sends it as a bearer
 * token; without, only requests made straight to the process from a loopback or private address. A
 * request a reverse proxy forwarded (it carries X-Forwarded-For, Forwarded or X-Real-IP, as every common
 * proxy adds) is public traffic, so a fresh install behind any proxy, or on a public address, does not
 * publish its metrics; a Prometheus beside it, or a health check, reads them as before.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import ipaddr from "ipaddr.js"
import { Redacted } from "effect"

export type MetricsAccess = "allowed" | "unauthorized" | "forbidden"

export interface MetricsRequest {
  /** The Authorization header. */
  readonly authorization: string | undefined
  /** Whether a proxy's forwarding header is present. */
  readonly forwarded: boolean
  /** The connection's peer address. */
  readonly peer: string | undefined
}

export const FORWARDING_HEADERS = ["x-forwarded-for", "forwarded", "x-real-ip"] as const

/** Addresses that cannot reach the process from the internet directly. */
const PRIVATE_RANGES: ReadonlySet<string> = new Set(["loopback", "private", "uniqueLocal", "linkLocal", "carrierGradeNat"])

const isPrivate = (address: string | undefined) =>
  address !== undefined && ipaddr.isValid(address) && PRIVATE_RANGES.has(ipaddr.process(address).range())

const digest = (text: string) => createHash("sha256").update(text).digest()

/** The access rule for a METRICS_TOKEN (or none). */
export const metricsAccess = (token: Redacted.Redacted<string> | undefined) => {
  const expected = token === undefined ? undefined : digest(Redacted.value(token))
  return (request: MetricsRequest): MetricsAccess => {
    if (expected !== undefined) {
      const presented = request.authorization?.match(/^Bearer +(\S+) *$/i)?.[1]
      // Compared as digests, in constant time.
      return presented !== undefined && timingSafeEqual(digest(presented), expected) ? "allowed" : "unauthorized"
    }
    return !request.forwarded && isPrivate(request.peer) ? "allowed" : "forbidden"
  }
}

/** What the refusals say, the same on PORT and on METRICS_PORT. */
export const metricsRefusal = {
  unauthorized: { status: 401, code: "INVALID_METRICS_TOKEN", message: "/metrics requires Authorization: Bearer <METRICS_TOKEN>" },
  forbidden: {
    status: 403,
    code: "METRICS_NOT_PUBLIC",
    message: "/metrics answers only direct requests from a private network; set METRICS_TOKEN to read it from elsewhere"
  }
} as const
