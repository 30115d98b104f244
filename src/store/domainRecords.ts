/**
 * Sending domains: the DKIM key pair made for each, the DNS records the owner publishes, and the pure
 * rule deciding a domain's status from what DNS answered.
 *
 * Only the DKIM record decides verification (we sign with that key; a receiver checks it). SPF and
 * DMARC are recommendations whose presence is reported per record.
 */
import { generateKeyPair } from "node:crypto"
import type { DnsAnswer } from "../lib/dns.ts"

export type RecordStatus = "VERIFIED" | "MISSING" | "MISMATCH" | "UNKNOWN"
export type DomainStatus = "PENDING" | "VERIFIED" | "FAILED"

export interface DnsRecord {
  readonly purpose: "DKIM" | "SPF" | "DMARC"
  readonly type: "TXT"
  readonly name: string
  readonly value: string
  readonly status: RecordStatus
  readonly required: boolean
}

export interface DkimKeys {
  readonly selector: string
  readonly privateKey: string
  /** Base64 of the DER SubjectPublicKeyInfo: the `p=` of the DKIM record. */
  readonly publicKey: string
}

/** A new key pair, its selector dated by `now` (epoch milliseconds, from the caller's Clock). */
export const generateDkimKeys = async (now: number): Promise<DkimKeys> => {
  // The callback form keeps the overload that types the encodings (promisify loses it).
  const { privateKey, publicKey } = await new Promise<{ privateKey: string; publicKey: Buffer }>((resolve, reject) =>
    generateKeyPair("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "der" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" }
    }, (error, publicKey, privateKey) => (error ? reject(error) : resolve({ privateKey, publicKey })))
  )
  // A dated selector lets a later key rotation publish the new record beside the old one.
  const selector = `ms${new Date(now).toISOString().slice(0, 10).replaceAll("-", "")}`
  return { selector, privateKey, publicKey: publicKey.toString("base64") }
}

const DOMAIN_PATTERN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/

export const normalizeDomain = (raw: string): string | undefined => {
  const domain = raw.trim().toLowerCase().replace(/\.$/, "")
  return DOMAIN_PATTERN.test(domain) ? domain : undefined
}

export const dkimRecordName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`

export const recordsFor = (domain: string, keys: Pick<DkimKeys, "selector" | "publicKey">): Array<DnsRecord> => [
  {
    purpose: "DKIM",
    type: "TXT",
    name: dkimRecordName(keys.selector, domain),
    value: `v=DKIM1; k=rsa; p=${keys.publicKey}`,
    status: "MISSING",
    required: true
  },
  { purpose: "SPF", type: "TXT", name: domain, value: "v=spf1 a mx ~all", status: "MISSING", required: false },
  { purpose: "DMARC", type: "TXT", name: `_dmarc.${domain}`, value: "v=DMARC1; p=none;", status: "MISSING", required: false }
]

/** What a TXT lookup answered (src/lib/dns.ts): the strings of every record, none, or no answer in time. */
export type TxtAnswer = DnsAnswer<string>

const tags = (record: string): Map<string, string> =>
  new Map(
    record.split(";").map((part) => part.trim()).filter(Boolean).map((part) => {
      const at = part.indexOf("=")
      return [part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).replace(/\s+/g, "")] as const
    })
  )

/** One record's status from the TXT answer at its name. */
export const recordStatus = (record: DnsRecord, answer: TxtAnswer): RecordStatus => {
  if (answer._tag === "Failed") return "UNKNOWN"
  if (answer._tag === "None") return "MISSING"
  switch (record.purpose) {
    case "DKIM": {
      const expected = tags(record.value).get("p")
      const candidates = answer.records.map(tags).filter((t) => (t.get("v") ?? "DKIM1") === "DKIM1" && t.has("p"))
      if (candidates.length === 0) return "MISSING"
      return candidates.some((t) => t.get("p") === expected) ? "VERIFIED" : "MISMATCH"
    }
    case "SPF":
      return answer.records.some((r) => r.trim().toLowerCase().startsWith("v=spf1")) ? "VERIFIED" : "MISSING"
    case "DMARC":
      return answer.records.some((r) => r.trim().toUpperCase().startsWith("V=DMARC1")) ? "VERIFIED" : "MISSING"
  }
}

/**
 * The domain's status after a check. A lookup that failed (timeout, SERVFAIL) tells nothing: the
 * domain keeps its previous status rather than being verified, or unverified, on a guess.
 */
export const domainStatus = (previous: DomainStatus, records: ReadonlyArray<DnsRecord>): DomainStatus => {
  const dkim = records.find((record) => record.purpose === "DKIM")!
  switch (dkim.status) {
    case "VERIFIED":
      return "VERIFIED"
    case "MISMATCH":
      return "FAILED"
    case "MISSING":
      return "PENDING"
    case "UNKNOWN":
      return previous
  }
}
