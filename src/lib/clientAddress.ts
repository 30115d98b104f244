/**
 * Who a request came from, behind reverse proxies. A connection's peer is the client unless it is one of
 * TRUSTED_PROXIES; then X-Forwarded-For, in which each proxy appends the address it received the request
 * from, is read from the right, skipping the entries of trusted proxies: the first entry that is not one
 * is the client (anything further left was written by that client, so anything at all). Without trusted
 * proxies the header is ignored: anyone can send one.
 */
import ipaddr from "ipaddr.js"
import { cidrMatcher } from "../domain/addresses.ts"

/** The canonical form of an address (IPv4-mapped IPv6 as IPv4, IPv6 shortest), or undefined. */
export const canonicalAddress = (text: string): string | undefined => ipaddr.isValid(text) ? ipaddr.process(text).toString() : undefined

/** An X-Forwarded-For entry as proxies write it: an address, possibly `[v6]`, `[v6]:port` or `v4:port`. */
const forwardedAddress = (entry: string): string | undefined => {
  const bracketed = entry.match(/^\[([^\]]+)\](?::\d+)?$/)
  if (bracketed) return canonicalAddress(bracketed[1]!)
  const withPort = entry.match(/^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/)
  return canonicalAddress(withPort ? withPort[1]! : entry)
}

/** The client's address of a request, from its peer and X-Forwarded-For, trusting `trustedProxies`. */
export const clientAddressResolver = (trustedProxies: ReadonlyArray<string>) => {
  const trusted = cidrMatcher(trustedProxies)
  return (peer: string | undefined, forwardedFor: string | undefined): string => {
    let client = canonicalAddress(peer ?? "") ?? "unknown"
    if (forwardedFor === undefined || !trusted(client)) return client
    const entries = forwardedFor.split(",")
    for (let index = entries.length - 1; index >= 0; index--) {
      const entry = forwardedAddress(entries[index]!.trim())
      // A trusted proxy passed on something that is not an address: it is the last hop we can name.
      if (entry === undefined) return client
      client = entry
      if (!trusted(entry)) return entry
    }
    return client
  }
}

/**
 * What a per-address limit counts: an IPv4 address, or an IPv6 address's /64 (one subscriber's network:
 * anyone with IPv6 has a whole /64 to change addresses in).
 */
export const addressBucket = (address: string): string => {
  if (!ipaddr.isValid(address)) return address
  const parsed = ipaddr.process(address)
  if (parsed.kind() === "ipv4") return parsed.toString()
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`).toString()}/64`
}
