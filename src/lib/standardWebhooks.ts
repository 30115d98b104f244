/**
 * Standard Webhooks signing (https://www.standardwebhooks.com), shared by the workflow WEBHOOK step and
 * event destinations: `webhook-signature` is `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * keyed with the secret's bytes (`whsec_` + base64). Several signatures, space-separated, let a
 * receiver verify with either of two secrets while one replaces the other.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

const keyOf = (secret: string) => Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")

/** Standard Webhooks signature of one message. */
export const signWebhook = (secret: string, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")}`

/** The `webhook-signature` header signed with each secret, in order. */
export const signatureHeader = (secrets: ReadonlyArray<string>, id: string, timestamp: number, body: string): string =>
  secrets.map((secret) => signWebhook(secret, id, timestamp, body)).join(" ")

/** Whether one of the header's signatures was made with `secret` (what a receiver checks). */
export const verifyWebhook = (secret: string, id: string, timestamp: number, body: string, header: string): boolean => {
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body))
  return header.split(" ").some((candidate) => {
    const given = Buffer.from(candidate)
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

/** A new signing secret: `whsec_` and 32 random bytes in base64. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`
