/**
 * SPF, DKIM and DMARC of a received message (mailauth), in the shape stored on the email and carried by
 * its email.received event. The DNS resolver is injected: DNS_SERVERS (the tests' local server) or the
 * system's.
 */
import type { Resolver } from "mailauth"
import { Resolver as DnsResolver } from "node:dns/promises"
import type { AuthenticationResults } from "../domain/email.ts"

export type { AuthenticationResults }

/** A mailauth resolver over node:dns, asking `servers` (host:port) or the system's resolvers. */
export const dnsResolver = (servers: ReadonlyArray<string>, timeoutMs = 2_000): Resolver => {
  const resolver = new DnsResolver({ timeout: timeoutMs, tries: 1, maxTimeout: timeoutMs })
  if (servers.length > 0) resolver.setServers([...servers])
  return (name, type) => resolver.resolve(name, type)
}

export const checkAuthentication = async (
  raw: Buffer,
  session: { readonly ip: string; readonly helo: string | undefined; readonly sender: string | undefined },
  resolver: Resolver
): Promise<AuthenticationResults> => {
  // Loaded with the first message: an api without inbound mail never loads mailauth (some 40 MiB).
  const { authenticate } = await import("mailauth")
  const result = await authenticate(raw, {
    ip: session.ip,
    ...(session.helo ? { helo: session.helo } : {}),
    ...(session.sender ? { sender: session.sender } : {}),
    mta: "mailstream",
    disableArc: true,
    disableBimi: true,
    resolver
  })
  const signatures = result.dkim.results
  const passed = signatures.filter((signature) => signature.status.result === "pass")
  return {
    spf: result.spf ? result.spf.status.result : "none",
    dkim: passed.length > 0 ? "pass" : signatures[0]?.status.result ?? "none",
    dkimDomains: passed.map((signature) => signature.signingDomain),
    dmarc: result.dmarc ? result.dmarc.status.result : "none"
  }
}
