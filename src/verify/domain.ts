/**
 * What DNS says about an address's domain: NS, MX, A and AAAA, asked at once. Only DNS: the website
 * is never fetched and no mail server is contacted. An unanswered lookup (timeout, server failure)
 * leaves its flag false and says so in `reasons`; it is never taken for a yes or a no.
 */
import { Effect } from "effect"
import type { DnsAnswer, DnsShape, MxRecord } from "../lib/dns.ts"

export interface DomainFacts {
  readonly domainExists: boolean
  /** MX hosts, or (no MX at all) an A/AAAA address as the implicit MX of RFC 5321 §5.1. */
  readonly hasMxRecords: boolean
  /** An A or AAAA record at the domain itself. */
  readonly hasWebsite: boolean
  /** Plain words for each of the three that is false, and for the implicit MX. */
  readonly reasons: ReadonlyArray<string>
  /** Some lookup went unanswered: the facts are worth keeping only briefly. */
  readonly incomplete: boolean
}

export interface DomainAnswers {
  readonly ns: DnsAnswer<string>
  readonly mx: DnsAnswer<MxRecord>
  readonly a: DnsAnswer<string>
  readonly aaaa: DnsAnswer<string>
}

const failure = (...answers: ReadonlyArray<DnsAnswer<unknown>>) => {
  for (const answer of answers) if (answer._tag === "Failed") return answer
  return undefined
}

/** The flags from the four answers. */
export const domainFacts = (domain: string, { ns, mx, a, aaaa }: DomainAnswers): DomainFacts => {
  const all = [ns, mx, a, aaaa]
  // Any record, or a NODATA answer (NOERROR without records), means the name exists.
  const exists = all.some((answer) => answer._tag === "Found" || (answer._tag === "None" && !answer.nxdomain))
  const nxdomain = !exists && all.some((answer) => answer._tag === "None" && answer.nxdomain)
  const incomplete = all.some((answer) => answer._tag === "Failed")
  if (nxdomain) {
    return {
      domainExists: false,
      hasMxRecords: false,
      hasWebsite: false,
      reasons: [`The domain ${domain} does not exist (NXDOMAIN), so it can receive no email and has no website.`],
      incomplete
    }
  }

  const reasons: Array<string> = []
  if (!exists) {
    reasons.push(`Could not tell whether the domain ${domain} exists: its DNS lookups ${failure(ns, mx, a, aaaa)!.reason}.`)
  }

  const hasAddress = a._tag === "Found" || aaaa._tag === "Found"
  const addressFailure = hasAddress ? undefined : failure(a, aaaa)
  const mxHosts = mx._tag === "Found" ? mx.records.filter((record) => record.exchange !== "") : []
  let hasMxRecords = mxHosts.length > 0
  if (mx._tag === "Found" && !hasMxRecords) {
    reasons.push(`${domain} publishes a null MX record: it accepts no email (RFC 7505).`)
  } else if (mx._tag === "Failed") {
    reasons.push(`Could not tell whether ${domain} accepts email: the MX lookup ${mx.reason}.`)
  } else if (mx._tag === "None") {
    if (hasAddress) {
      hasMxRecords = true
      reasons.push(`${domain} has no MX record; mail is delivered to its A/AAAA address instead (implicit MX, RFC 5321 §5.1).`)
    } else if (addressFailure) {
      reasons.push(`${domain} has no MX record, and the A/AAAA lookup for its implicit MX ${addressFailure.reason}.`)
    } else if (exists) {
      reasons.push(`${domain} has no MX record and no A/AAAA address, so it cannot receive email.`)
    }
  }

  if (addressFailure) {
    reasons.push(`Could not tell whether ${domain} has a website: the A/AAAA lookup ${addressFailure.reason}.`)
  } else if (!hasAddress) {
    reasons.push(`${domain} has no A or AAAA record, so no website.`)
  }
  return { domainExists: exists, hasMxRecords, hasWebsite: hasAddress, reasons, incomplete }
}

/** Asks the four questions at once (each has its own short timeout). */
export const lookupDomain = (dns: DnsShape, domain: string): Effect.Effect<DomainFacts> =>
  Effect.map(
    Effect.all({ ns: dns.ns(domain), mx: dns.mx(domain), a: dns.a(domain), aaaa: dns.aaaa(domain) }, { concurrency: "unbounded" }),
    (answers) => domainFacts(domain, answers)
  )
