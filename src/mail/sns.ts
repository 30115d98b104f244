/**
 * Amazon SES notifications delivered by SNS: message signature verification and the translation of
 * SES bounce, complaint and delivery notifications into ours.
 *
 * The signing certificate is fetched (HTTPS, AWS hosts only) from the message's SigningCertURL and
 * cached; `SNS_SIGNING_CERT_FILE` pins one certificate instead, for deployments that cannot reach AWS
 * at request time (and for tests).
 */
import { createVerify } from "node:crypto"
import { readFile } from "node:fs/promises"
import type { BounceType, Notification } from "./Notifications.ts"

export interface SnsMessage {
  readonly Type: string
  readonly MessageId: string
  readonly TopicArn: string
  readonly Message: string
  readonly Timestamp: string
  readonly SignatureVersion: string
  readonly Signature: string
  readonly SigningCertURL: string
  readonly Subject?: string
  readonly SubscribeURL?: string
  readonly Token?: string
}

const REQUIRED = ["Type", "MessageId", "TopicArn", "Message", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL"] as const

export const parseSnsMessage = (body: string): SnsMessage | string => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return "the body is not JSON"
  }
  if (typeof parsed !== "object" || parsed === null) return "the body is not an SNS message"
  const record = parsed as Record<string, unknown>
  const missing = REQUIRED.filter((key) => typeof record[key] !== "string")
  return missing.length > 0 ? `the SNS message lacks ${missing.join(", ")}` : (record as unknown as SnsMessage)
}

/** The canonical string SNS signs (docs: "Verifying the signatures of Amazon SNS messages"). */
export const stringToSign = (message: SnsMessage): string => {
  const keys = message.Type === "Notification"
    ? ["Message", "MessageId", ...(message.Subject !== undefined ? ["Subject"] : []), "Timestamp", "TopicArn", "Type"]
    : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
  return keys.map((key) => `${key}\n${(message as unknown as Record<string, string>)[key] ?? ""}\n`).join("")
}

/**
 * Why a topic is not accepted, or undefined when it is. `accepted` is SES_TOPIC_ARNS: empty accepts
 * none (any AWS account can sign a message for its own topic, and one that knows a Message-ID could
 * bounce that address), `*` accepts any.
 */
export const topicRefusal = (accepted: ReadonlyArray<string>, topic: string): string | undefined => {
  if (accepted.includes("*") || accepted.includes(topic)) return undefined
  return accepted.length === 0
    ? "SES notifications are not accepted: set SES_TOPIC_ARNS to the SNS topics that may send them (or * for any)"
    : `Topic ${topic} is not accepted here (SES_TOPIC_ARNS)`
}

/** An HTTPS URL on SNS's own hosts (certificates, subscription confirmations). */
export const isSnsUrl = (raw: string): boolean => {
  try {
    const url = new URL(raw)
    return url.protocol === "https:" && /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(url.hostname)
  } catch {
    return false
  }
}

/** Only certificates served by SNS itself over HTTPS are trusted. */
export const isAwsCertUrl = (raw: string): boolean => isSnsUrl(raw) && new URL(raw).pathname.endsWith(".pem")

const certificates = new Map<string, Promise<string>>()

const certificateFor = (url: string, pinnedFile: string | undefined): Promise<string> => {
  const key = pinnedFile ? `file:${pinnedFile}` : url
  let certificate = certificates.get(key)
  if (!certificate) {
    certificate = pinnedFile
      ? readFile(pinnedFile, "utf8")
      : fetch(url, { redirect: "error", signal: AbortSignal.timeout(5_000) }).then((response) => {
        if (!response.ok) throw new Error(`certificate fetch answered ${response.status}`)
        return response.text()
      })
    certificate.catch(() => certificates.delete(key))
    certificates.set(key, certificate)
  }
  return certificate
}

/** Resolves with undefined when the message is authentic, or the reason it is not. */
export const verifySnsMessage = async (message: SnsMessage, pinnedCertFile: string | undefined): Promise<string | undefined> => {
  if (!isAwsCertUrl(message.SigningCertURL)) return "SigningCertURL is not an SNS certificate URL"
  const algorithm = message.SignatureVersion === "1" ? "RSA-SHA1" : message.SignatureVersion === "2" ? "RSA-SHA256" : undefined
  if (!algorithm) return `unsupported SignatureVersion ${message.SignatureVersion}`
  let certificate: string
  try {
    certificate = await certificateFor(message.SigningCertURL, pinnedCertFile)
  } catch (error) {
    return `the signing certificate could not be loaded: ${String(error)}`
  }
  try {
    const valid = createVerify(algorithm).update(stringToSign(message), "utf8").verify(certificate, message.Signature, "base64")
    return valid ? undefined : "the signature does not match"
  } catch (error) {
    return `the signature could not be checked: ${String(error)}`
  }
}

interface SesNotification {
  readonly notificationType?: string
  readonly eventType?: string
  readonly mail?: { readonly messageId?: string; readonly commonHeaders?: { readonly messageId?: string } }
  readonly bounce?: { readonly bounceType?: string; readonly feedbackId?: string }
  readonly complaint?: { readonly feedbackId?: string }
}

/** The SES notification inside an SNS Notification, as ours; undefined for kinds we do not track. */
export const sesNotification = (snsMessageId: string, message: string): Notification | undefined => {
  let ses: SesNotification
  try {
    ses = JSON.parse(message) as SesNotification
  } catch {
    return undefined
  }
  const type = ses.notificationType ?? ses.eventType
  // SES's own mail.messageId is not ours; the Message-ID header we set is in commonHeaders.
  const messageId = ses.mail?.commonHeaders?.messageId
  if (!messageId) return undefined
  switch (type) {
    case "Delivery":
      return { id: snsMessageId, kind: "delivery", messageId }
    case "Bounce": {
      const bounceType: BounceType = ses.bounce?.bounceType === "Permanent"
        ? "Permanent"
        : ses.bounce?.bounceType === "Transient"
        ? "Transient"
        : "Undetermined"
      return { id: snsMessageId, kind: "bounce", messageId, bounceType }
    }
    case "Complaint":
      return { id: snsMessageId, kind: "complaint", messageId }
    default:
      return undefined
  }
}

/** An SES receipt ("Received") notification: mail SES accepted for one of our domains. */
export interface SesReceived {
  /** The message as received (SNS action), or only its headers (S3 action: the body stays in the bucket). */
  readonly raw: Buffer
  readonly complete: boolean
  readonly recipients: ReadonlyArray<string>
  /** The envelope sender (MAIL FROM). */
  readonly source: string | undefined
  /** SES's verdicts, lower-case: pass, fail, gray, processing_failed. */
  readonly verdicts: { readonly spf: string; readonly dkim: string; readonly dmarc: string }
}

interface SesReceiptNotification {
  readonly notificationType?: string
  readonly receipt?: {
    readonly recipients?: ReadonlyArray<string>
    readonly spfVerdict?: { readonly status?: string }
    readonly dkimVerdict?: { readonly status?: string }
    readonly dmarcVerdict?: { readonly status?: string }
    readonly action?: { readonly type?: string; readonly encoding?: string }
  }
  readonly mail?: { readonly source?: string; readonly headers?: ReadonlyArray<{ readonly name?: string; readonly value?: string }> }
  readonly content?: string
}

/**
 * The receipt notification inside an SNS Notification (AWS: "Amazon SES email receiving notification
 * contents"), or undefined when it is not one. With the SNS action `content` is the whole message (UTF8,
 * or BASE64 as the action's `encoding` says); otherwise the headers SES lists are all there is.
 */
export const sesReceived = (message: string): SesReceived | undefined => {
  let ses: SesReceiptNotification
  try {
    ses = JSON.parse(message) as SesReceiptNotification
  } catch {
    return undefined
  }
  if (ses.notificationType !== "Received" || !ses.receipt) return undefined
  const verdict = (value: { readonly status?: string } | undefined) => (value?.status ?? "none").toLowerCase()
  const complete = typeof ses.content === "string"
  const raw = complete
    ? Buffer.from(ses.content!, ses.receipt.action?.encoding === "BASE64" ? "base64" : "utf8")
    : Buffer.from(
      (ses.mail?.headers ?? []).map((header) => `${header.name ?? ""}: ${header.value ?? ""}`).join("\r\n") + "\r\n\r\n",
      "utf8"
    )
  return {
    raw,
    complete,
    recipients: ses.receipt.recipients ?? [],
    source: ses.mail?.source,
    verdicts: { spf: verdict(ses.receipt.spfVerdict), dkim: verdict(ses.receipt.dkimVerdict), dmarc: verdict(ses.receipt.dmarcVerdict) }
  }
}
