/**
 * DNS lookups with typed outcomes, over node:dns `Resolver` (c-ares). The servers come from
 * DNS_SERVERS (comma-separated host:port; the system's resolvers when unset). Every lookup has a
 * short timeout and a single try, and never fails: it answers `Found`, `None` (the name does not
 * exist, or has no records of that type) or `Failed` (timeout, SERVFAIL, refused, ...), so callers
 * report an unknown as unknown instead of guessing.
 *
 * Shared by address verification (NS, MX, A, AAAA) and sending-domain checks (TXT for SPF, DKIM, DMARC).
 */
import { Context, Data, Duration, Effect, Layer } from "effect"
import { Resolver } from "node:dns/promises"
import { AppConfig } from "../config.ts"

export type DnsAnswer<A> =
  | { readonly _tag: "Found"; readonly records: ReadonlyArray<A> }
  /** NXDOMAIN (`nxdomain: true`: the name does not exist) or NODATA (the name exists, without records of this type). */
  | { readonly _tag: "None"; readonly nxdomain: boolean }
  /**
   * No answer: `timedOut`, or another failure; `code` is c-ares's (ETIMEOUT, ESERVFAIL, ECONNREFUSED,
   * EBADNAME, ...), `reason` the same in words that complete "the lookup …": "timed out",
   * "failed: the DNS server refused the query (EREFUSED)".
   */
  | { readonly _tag: "Failed"; readonly timedOut: boolean; readonly code: string; readonly reason: string }

export interface MxRecord {
  readonly exchange: string
  readonly priority: number
}

export interface DnsShape {
  readonly a: (name: string) => Effect.Effect<DnsAnswer<string>>
  readonly aaaa: (name: string) => Effect.Effect<DnsAnswer<string>>
  /** A null MX (RFC 7505: "." at priority 0, "the domain accepts no mail") has `exchange` "". */
  readonly mx: (name: string) => Effect.Effect<DnsAnswer<MxRecord>>
  readonly ns: (name: string) => Effect.Effect<DnsAnswer<string>>
  /** One string per record, its character-strings joined (RFC 7208 §3.3), as SPF, DKIM and DMARC read them. */
  readonly txt: (name: string) => Effect.Effect<DnsAnswer<string>>
}

export interface DnsOptions {
  /** `host`, `host:port` or `[v6]:port`; empty for the system's resolvers. */
  readonly servers?: ReadonlyArray<string> | undefined
  /** Per query and server (c-ares may adapt it down to ~1 s after fast answers). Default 2 s. */
  readonly timeoutMs?: number | undefined
}

export const DEFAULT_DNS_TIMEOUT_MS = 2_000

export class InvalidDnsServers extends Data.TaggedError("InvalidDnsServers")<{
  readonly servers: ReadonlyArray<string>
  readonly cause: unknown
}> {
  override get message() {
    return `DNS_SERVERS is not a list of host:port addresses: ${this.servers.join(",")}`
  }
}

const FAILURES: Record<string, string> = {
  ESERVFAIL: "the DNS server failed",
  EREFUSED: "the DNS server refused the query",
  ECONNREFUSED: "the DNS server could not be reached",
  EBADNAME: "the name is not a valid DNS name",
  EBADRESP: "the DNS server sent a malformed answer",
  EFORMERR: "the DNS server could not read the query"
}

const timedOut: DnsAnswer<never> = { _tag: "Failed", timedOut: true, code: "ETIMEOUT", reason: "timed out" }

const outcome = (error: unknown): DnsAnswer<never> => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "EUNKNOWN"
  switch (code) {
    case "ENOTFOUND":
      return { _tag: "None", nxdomain: true }
    case "ENODATA":
      return { _tag: "None", nxdomain: false }
    case "ETIMEOUT":
      return timedOut
    default:
      return { _tag: "Failed", timedOut: false, code, reason: `failed: ${FAILURES[code] ?? "no usable answer"} (${code})` }
  }
}

export class Dns extends Context.Service<Dns, DnsShape>()("app/lib/Dns") {
  static readonly make = Effect.fnUntraced(function*(options: DnsOptions = {}) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS
    const servers = options.servers ?? []
    // maxTimeout caps c-ares's adaptive timeout, which otherwise starts near 3 s for a fresh resolver.
    const resolver = new Resolver({ timeout: timeoutMs, tries: 1, maxTimeout: timeoutMs })
    if (servers.length > 0) {
      yield* Effect.try({
        try: () => resolver.setServers([...servers]),
        catch: (cause) => new InvalidDnsServers({ servers, cause })
      })
    }
    // c-ares asks each server in turn; this guard only matters if it ever failed to time out itself.
    const guard = Duration.millis(timeoutMs * Math.max(1, resolver.getServers().length) + 1_000)

    const lookup = <A>(type: string, query: (name: string) => Promise<ReadonlyArray<A>>) =>
      Effect.fn(`Dns.${type}`)(function*(name: string) {
        return yield* Effect.tryPromise(() => query(name)).pipe(
          Effect.map((records): DnsAnswer<A> => (records.length > 0 ? { _tag: "Found", records } : { _tag: "None", nxdomain: false })),
          Effect.catch((error) => Effect.succeed(outcome(error.cause))),
          Effect.timeoutOrElse({
            duration: guard,
            orElse: () => Effect.succeed<DnsAnswer<A>>(timedOut)
          })
        )
      })

    return Dns.of({
      a: lookup("a", (name) => resolver.resolve4(name)),
      aaaa: lookup("aaaa", (name) => resolver.resolve6(name)),
      mx: lookup(
        "mx",
        async (name) =>
          (await resolver.resolveMx(name)).map(({ exchange, priority }) => ({ exchange: exchange === "." ? "" : exchange, priority }))
      ),
      ns: lookup("ns", (name) => resolver.resolveNs(name)),
      txt: lookup("txt", async (name) => (await resolver.resolveTxt(name)).map((chunks) => chunks.join("")))
    })
  })

  /** Servers from DNS_SERVERS (AppConfig). */
  static readonly layer = Layer.effect(
    Dns,
    Effect.flatMap(Effect.service(AppConfig), (config) => Dns.make({ servers: config.dnsServers }))
  )
}

/**
 * A host's addresses (A and AAAA) through `dns`, as the SSRF-safe client resolves them (DNS_SERVERS):
 * for workflow webhooks and event destinations. Fails only when both lookups failed.
 */
export const hostResolver = (dns: DnsShape) => async (host: string): Promise<ReadonlyArray<string>> => {
  const [a, aaaa] = await Promise.all([Effect.runPromise(dns.a(host)), Effect.runPromise(dns.aaaa(host))])
  if (a._tag === "Failed" && aaaa._tag === "Failed") throw new Error(`the lookup ${a.reason}`)
  return [...(a._tag === "Found" ? a.records : []), ...(aaaa._tag === "Found" ? aaaa.records : [])]
}
