import { Schema } from "effect"

// Deliberately pragmatic: one @, a dotted domain with a 2+ letter TLD, no spaces or control
// characters, within RFC 5321 lengths. Deliverability is /v1/verify's job, not this check's.
const EMAIL_PATTERN = /^[^\s\x00-\x1f\x7f@<>()[\]\\,;:"]+@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i

export const MAX_EMAIL_LENGTH = 254

export const isValidEmail = (value: string): boolean =>
  value.length <= MAX_EMAIL_LENGTH && EMAIL_PATTERN.test(value) && value.split("@")[0]!.length <= 64

/** Emails are compared case-insensitively, so they are stored in one canonical form. */
export const normalizeEmail = (value: string): string => value.trim().toLowerCase()

/** How far a queued email got, in order; FAILED and SUPPRESSED are how one that was not sent ended. */
const AFTER_QUEUED = ["SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED", "SUPPRESSED"] as const

/**
 * An email's statuses: forward from PENDING to COMPLAINED (src/store/Emails.ts); FAILED and SUPPRESSED are
 * final. RECEIVED is received mail's only status (direction inbound, src/inbound/InboundMail.ts).
 */
export const EMAIL_STATUSES = ["PENDING", "SENDING", ...AFTER_QUEUED, "RECEIVED"] as const

/** The steps of an email's timeline (GET /emails/:id): RECEIVED for received mail; QUEUED and on for sent mail. */
export const TIMELINE_STEPS = ["RECEIVED", "QUEUED", ...AFTER_QUEUED] as const

/** Mail we sent, or mail we received. */
export const EMAIL_DIRECTIONS = ["outbound", "inbound"] as const
export type EmailDirection = (typeof EMAIL_DIRECTIONS)[number]
export type EmailStatus = (typeof EMAIL_STATUSES)[number]
export type TimelineStep = (typeof TIMELINE_STEPS)[number]

/** SPF, DKIM and DMARC of a received message, as stored on its email and carried by its email.received event. */
export const AuthenticationResults = Schema.Struct({
  spf: Schema.String.annotate({
    description: "pass, fail, softfail, neutral, none, temperror, permerror (SES: pass, fail, gray, processing_failed)"
  }),
  dkim: Schema.String.annotate({ description: "pass when any signature verified; else the first signature's result, or none" }),
  dkimDomains: Schema.Array(Schema.String).annotate({ description: "The domains whose signatures verified" }),
  dmarc: Schema.String
})
export type AuthenticationResults = typeof AuthenticationResults.Type
