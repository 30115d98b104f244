/**
 * Which IP addresses are which: a range list (`cidrMatcher`: TRUSTED_PROXIES, WEBHOOK_ALLOW_CIDRS) and
 * public unicast (`isPublicAddress`, what src/lib/safeHttp.ts lets user-chosen URLs reach). Apart from the HTTP
 * client so that the configuration (src/config.ts), which every command loads, does not load node:http.
 */
import ipaddr from "ipaddr.js"

/**
 * NAT64 (RFC 6052's well-known prefix 64:ff9b::/96): on an IPv6-only network with DNS64 this is how a
 * public IPv4 host is reached, so it is judged by the IPv4 address in its last 32 bits.
 */
const NAT64 = ipaddr.parseCIDR("64:ff9b::/96")
/** The only IPv6 space allocated for global unicast; everything outside it (::/8 with IPv4-compatible ::a.b.c.d, ...) is refused. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3")

/**
 * The address an IP is judged as: IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) IPv6 as
 * the IPv4 address they carry, everything else as it is. Other IPv6 forms that carry an IPv4 address
 * are not unwrapped: they are refused by `isPublicAddress` (IPv4-compatible ::a.b.c.d lies outside
 * 2000::/3; 6to4 2002::/16, Teredo 2001::/32 and RFC 6145's ::ffff:0:a.b.c.d are special ranges).
 */
const judgedAs = (address: string): ipaddr.IPv4 | ipaddr.IPv6 => {
  const parsed = ipaddr.process(address)
  if (parsed.kind() === "ipv6" && parsed.match(NAT64)) {
    const bytes = (parsed as ipaddr.IPv6).toByteArray()
    return new ipaddr.IPv4(bytes.slice(12))
  }
  return parsed
}

/** Parses `a.b.c.d/n, x::/n` into a test of addresses (judged as by `judgedAs`); throws on a bad range. */
export const cidrMatcher = (ranges: ReadonlyArray<string>): (address: string) => boolean => {
  const parsed = ranges.map((range) => ipaddr.parseCIDR(range.includes("/") ? range : `${range}/${range.includes(":") ? 128 : 32}`))
  if (parsed.length === 0) return () => false
  return (address) => {
    if (!ipaddr.isValid(address)) return false
    const candidate = judgedAs(address)
    return parsed.some(([network, bits]) => network.kind() === candidate.kind() && candidate.match(network, bits))
  }
}

/**
 * Only public unicast addresses: IPv4 by ipaddr.js's ranges (`unicast`: not loopback, private,
 * link-local, CGNAT, multicast, reserved...), IPv6 within 2000::/3 and outside its special ranges
 * (6to4, Teredo, documentation...); IPv4-mapped and NAT64 IPv6 judged as their IPv4 address.
 */
export const isPublicAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return false
  const judged = judgedAs(address)
  if (judged.range() !== "unicast") return false
  return judged.kind() === "ipv4" || judged.match(GLOBAL_UNICAST_V6)
}
