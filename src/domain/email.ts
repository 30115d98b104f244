// Deliberately pragmatic: one @, a dotted domain with a 2+ letter TLD, no spaces or control
// characters, within RFC 5321 lengths. Deliverability is /v1/verify's job, not this check's.
const EMAIL_PATTERN = /^[^\s\x00-\x1f\x7f@<>()[\]\\,;:"]+@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i

export const MAX_EMAIL_LENGTH = 254

export const isValidEmail = (value: string): boolean =>
  value.length <= MAX_EMAIL_LENGTH && EMAIL_PATTERN.test(value) && value.split("@")[0]!.length <= 64

/** Emails are compared case-insensitively, so they are stored in one canonical form. */
export const normalizeEmail = (value: string): string => value.trim().toLowerCase()

/**
 * An email's statuses: forward from PENDING to COMPLAINED (src/store/Emails.ts); FAILED and SUPPRESSED are
 * final. RECEIVED is received mail's only status (direction inbound, src/inbound/InboundMail.ts).
 */
export const EMAIL_STATUSES = [
  "PENDING",
  "SENDING",
  "SENT",
  "DELIVERED",
  "OPENED",
  "CLICKED",
  "BOUNCED",
  "COMPLAINED",
  "FAILED",
  "SUPPRESSED",
  "RECEIVED"
] as const

/** Mail we sent, or mail we received. */
export const EMAIL_DIRECTIONS = ["outbound", "inbound"] as const
export type EmailDirection = (typeof EMAIL_DIRECTIONS)[number]
export type EmailStatus = (typeof EMAIL_STATUSES)[number]

/** SPF, DKIM and DMARC of a received message, as stored on its email and carried by its email.received event. */
export interface AuthenticationResults {
  /** pass, fail, softfail, neutral, none, temperror, permerror (SES: pass, fail, gray, processing_failed). */
  readonly spf: string
  /** pass when any signature verified; else the first signature's result, or none. */
  readonly dkim: string
  /** The domains whose signatures verified. */
  readonly dkimDomains: ReadonlyArray<string>
  readonly dmarc: string
}
