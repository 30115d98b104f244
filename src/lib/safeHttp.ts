/**
 * An HTTP client for URLs that users choose (workflow WEBHOOK steps), safe against SSRF:
 *
 * - the host is resolved once (A and AAAA through the caller's resolver, i.e. DNS_SERVERS), and every
 *   address must be public unicast (`isPublicAddress`): loopback, private, link-local
 *   (169.254.169.254), CGNAT, multicast, reserved and the rest are refused before any connection, and
 *   so is every IPv6 form that carries an IPv4 address, unless it is judged by that IPv4 address;
 * - the connection goes to the checked address (a custom `lookup` that answers only it), so a DNS
 *   answer that changes between check and connect (rebinding) cannot redirect it; TLS still verifies
 *   the certificate against the host name;
 * - redirects are followed by hand (at most MAX_REDIRECTS, more is `Invalid`, not worth retrying),
 *   each hop resolved and checked again, so a redirect into private space is refused; a redirect to
 *   another origin carries only the headers that hold no credentials (`CROSS_ORIGIN_HEADERS`);
 * - one overall timeout, and the response body is read up to a cap (the rest is dropped).
 */
import http from "node:http"
import https from "node:https"
import type { LookupFunction } from "node:net"
import ipaddr from "ipaddr.js"
import { isPublicAddress } from "../domain/addresses.ts"

export interface SafeRequest {
  readonly url: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
  readonly timeoutMs?: number
  readonly maxResponseBytes?: number
  /** Addresses allowed although not public (WEBHOOK_ALLOW_CIDRS: an operator's internal services). */
  readonly allow?: (address: string) => boolean
  /** Headers (lower-case) that may follow a redirect to another origin, besides CROSS_ORIGIN_HEADERS. */
  readonly crossOriginHeaders?: ReadonlyArray<string>
}

export type SafeResponse =
  | { readonly _tag: "Response"; readonly status: number; readonly body: string; readonly truncated: boolean; readonly url: string }
  /** Refused before connecting: the URL, or an address it resolved to, is not allowed. */
  | { readonly _tag: "Blocked"; readonly reason: string }
  /** No response: DNS failure, connection refused or reset, timeout. Worth retrying. */
  | { readonly _tag: "Failed"; readonly reason: string }
  /** The request cannot succeed as it stands (too many redirects, a redirect to a bad URL): not worth retrying. */
  | { readonly _tag: "Invalid"; readonly reason: string }

/** Resolves a host name to its addresses (A and AAAA); an empty list when it has none. */
export type Resolve = (host: string) => Promise<ReadonlyArray<string>>

const MAX_REDIRECTS = 3

/**
 * The only headers a caller set that follow a redirect to another origin. The rest are for the origin
 * they were configured for: `Host` (it would name the first host to the second), `Authorization`,
 * `Cookie`, and custom headers, which often carry API keys under names no list could foresee.
 */
const CROSS_ORIGIN_HEADERS = ["accept", "accept-language", "content-type", "user-agent"]

/** The same origin, or the same host moving from http to https on the default ports (an upgrade, not a new party). */
const sameOrigin = (from: URL, to: URL): boolean =>
  from.origin === to.origin ||
  (from.protocol === "http:" && to.protocol === "https:" && from.hostname === to.hostname && from.port === "" && to.port === "")
export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024

/** The address to connect to for a URL's host, or why there is none. */
const checkHost = async (
  host: string,
  resolve: Resolve,
  allow: (address: string) => boolean
): Promise<{ address: string; family: 4 | 6 } | { blocked: string } | { failed: string }> => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  let addresses: ReadonlyArray<string>
  if (ipaddr.isValid(bare)) {
    addresses = [bare]
  } else {
    try {
      addresses = await resolve(bare)
    } catch (error) {
      return { failed: `could not resolve ${bare}: ${error instanceof Error ? error.message : String(error)}` }
    }
    if (addresses.length === 0) return { failed: `${bare} has no A or AAAA records` }
  }
  // Every address must be public: a name that also resolves to a private address is refused outright.
  const bad = addresses.find((address) => !isPublicAddress(address) && !allow(address))
  if (bad !== undefined) return { blocked: `${bare} resolves to ${bad}, which is not a public unicast address` }
  const chosen = ipaddr.process(addresses[0]!)
  return { address: chosen.toString(), family: chosen.kind() === "ipv4" ? 4 : 6 }
}

/**
 * Connections kept open between requests to the same host (destinations deliver many events to one
 * endpoint: a new TCP and TLS handshake per delivery was most of an attempt's cost). Safe with the
 * address pinning above: a pooled socket was connected to an address checked for that host, and every
 * request checks its host again before it may use one. Idle sockets close after 15 s and, unref'd by the
 * agent, never keep a process alive. No cap on sockets per host: each caller bounds its own requests in
 * flight (an event destination's DESTINATION_CONCURRENCY), and a cap shared by every caller would let one
 * endpoint that never answers hold the sockets another destination on the same host and port needs (its
 * requests would wait in the agent, and time out there).
 */
const keepAlive = { keepAlive: true, maxSockets: Infinity, timeout: 15_000 }
const agents = { "http:": new http.Agent(keepAlive), "https:": new https.Agent(keepAlive) }

const once = (
  url: URL,
  request: { method: string; headers: Readonly<Record<string, string>>; body?: string | undefined },
  target: { address: string; family: 4 | 6 },
  deadline: number,
  maxBytes: number
) =>
  new Promise<{ status: number; location: string | undefined; body: string; truncated: boolean } | { failed: string }>((resolve) => {
    const lookup: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) {
        ;(callback as unknown as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, [target])
      } else callback(null, target.address, target.family)
    }
    const remaining = Math.max(1, deadline - Date.now())
    const client = url.protocol === "https:" ? https : http
    const req = client.request(url, {
      method: request.method,
      headers: request.body === undefined
        ? request.headers
        : { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
      lookup,
      timeout: remaining,
      agent: url.protocol === "https:" ? agents["https:"] : agents["http:"]
    }, (res) => {
      const chunks: Array<Buffer> = []
      let size = 0
      let truncated = false
      const finish = () => {
        clearTimeout(timer)
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString("utf8"), truncated })
      }
      res.on("data", (chunk: Buffer) => {
        if (truncated) return
        if (size + chunk.length > maxBytes) {
          chunks.push(chunk.subarray(0, maxBytes - size))
          size = maxBytes
          truncated = true
          res.destroy()
          finish()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      res.on("end", () => {
        if (!truncated) finish()
      })
      res.on("error", (error) => {
        if (!truncated) {
          clearTimeout(timer)
          resolve({ failed: `response failed: ${error.message}` })
        }
      })
    })
    const timer = setTimeout(() => {
      req.destroy(new Error("timed out"))
    }, remaining)
    req.on("timeout", () => req.destroy(new Error("timed out")))
    req.on("error", (error) => {
      clearTimeout(timer)
      resolve({ failed: error.message })
    })
    if (request.body !== undefined) req.write(request.body)
    req.end()
  })

/** Never rejects: every failure is a `Blocked` or `Failed` answer. */
export const safeFetch = (request: SafeRequest, resolve: Resolve): Promise<SafeResponse> =>
  fetchChecked(request, resolve).catch((error: unknown) => ({
    _tag: "Failed" as const,
    reason: `request failed: ${error instanceof Error ? error.message : String(error)}`
  }))

const fetchChecked = async (request: SafeRequest, resolve: Resolve): Promise<SafeResponse> => {
  const deadline = Date.now() + (request.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    return { _tag: "Blocked", reason: "not a valid URL" }
  }
  let method = request.method.toUpperCase()
  let body = request.body
  let headers = { ...request.headers }
  for (let hop = 0;; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:") return { _tag: "Blocked", reason: `${url.protocol} URLs are not allowed` }
    if (url.username || url.password) return { _tag: "Blocked", reason: "URLs with credentials are not allowed" }
    const target = await checkHost(url.hostname, resolve, request.allow ?? (() => false))
    if ("blocked" in target) return { _tag: "Blocked", reason: target.blocked }
    if ("failed" in target) return { _tag: "Failed", reason: target.failed }
    if (Date.now() >= deadline) return { _tag: "Failed", reason: "timed out" }
    const result = await once(url, { method, headers, body }, target, deadline, maxBytes)
    if ("failed" in result) return { _tag: "Failed", reason: result.failed }
    const redirect = [301, 302, 303, 307, 308].includes(result.status) && result.location !== undefined
    if (!redirect) return { _tag: "Response", status: result.status, body: result.body, truncated: result.truncated, url: url.toString() }
    if (hop >= MAX_REDIRECTS) return { _tag: "Invalid", reason: `more than ${MAX_REDIRECTS} redirects` }
    let next: URL
    try {
      next = new URL(result.location!, url)
    } catch {
      return { _tag: "Invalid", reason: "redirected to an invalid URL" }
    }
    if (result.status === 303 || ((result.status === 301 || result.status === 302) && method === "POST")) {
      method = "GET"
      body = undefined
      headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !/^content-/i.test(name)))
    }
    if (!sameOrigin(url, next)) {
      const crossing = new Set([...CROSS_ORIGIN_HEADERS, ...(request.crossOriginHeaders ?? [])])
      headers = Object.fromEntries(Object.entries(headers).filter(([name]) => crossing.has(name.toLowerCase())))
    }
    url = next
  }
}
