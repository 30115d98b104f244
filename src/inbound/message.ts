/**
 * A received message as the service records it: its addresses, subject, Message-ID and reply links,
 * body and attachments, parsed with mailparser from the raw RFC 5322 message.
 */
import type { AddressObject } from "mailparser"
import { isValidEmail, normalizeEmail } from "../domain/email.ts"
import type { Attachment } from "../store/Emails.ts"

export interface InboundMessage {
  /** The From header's first address (normalized), or undefined when it has none that is valid. */
  readonly from: string | undefined
  readonly fromName: string | undefined
  readonly replyTo: string | undefined
  readonly subject: string
  /** Without angle brackets. */
  readonly messageId: string | undefined
  /** Message-IDs this one answers, In-Reply-To first, then References newest first (no angle brackets). */
  readonly answers: ReadonlyArray<string>
  readonly html: string
  readonly attachments: ReadonlyArray<Attachment>
}

const bare = (id: string) => id.trim().replace(/^<|>$/g, "")

/** `<a@x> <b@y>` (or an array of them) → ids without brackets. */
const messageIds = (value: string | ReadonlyArray<string> | undefined): Array<string> =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value])
    .flatMap((entry: string) => entry.match(/<[^<>\s]+>|[^\s<>]+@[^\s<>]+/g) ?? [])
    .map(bare)

const firstAddress = (value: AddressObject | ReadonlyArray<AddressObject> | undefined) => {
  const objects = Array.isArray(value) ? value : value === undefined ? [] : [value as AddressObject]
  for (const object of objects) {
    for (const entry of object.value) {
      if (entry.address && isValidEmail(entry.address.trim()))
        return { address: normalizeEmail(entry.address), name: entry.name || undefined }
    }
  }
  return undefined
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (char) => `&${({ "&": "amp", "<": "lt", ">": "gt", '"': "quot" })[char]};`)

export const parseInbound = async (raw: Buffer): Promise<InboundMessage> => {
  // Loaded with the first message: an api that receives none never loads mailparser (some 30 MiB).
  const { simpleParser } = await import("mailparser")
  const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true })
  const from = firstAddress(parsed.from)
  const references = messageIds(parsed.references).reverse()
  const inReplyTo = messageIds(parsed.inReplyTo)
  const html = typeof parsed.html === "string" && parsed.html !== ""
    ? parsed.html
    : parsed.text
    ? `<pre style="white-space:pre-wrap">${escapeHtml(parsed.text)}</pre>`
    : ""
  return {
    from: from?.address,
    fromName: from?.name,
    replyTo: firstAddress(parsed.replyTo)?.address,
    subject: parsed.subject ?? "",
    messageId: parsed.messageId ? bare(parsed.messageId) : undefined,
    answers: [...new Set([...inReplyTo, ...references])],
    html,
    attachments: parsed.attachments.map((attachment) => ({
      filename: attachment.filename ?? "attachment",
      content: attachment.content.toString("base64"),
      contentType: attachment.contentType,
      ...(attachment.contentId && attachment.contentDisposition === "inline"
        ? { contentId: bare(attachment.contentId), disposition: "inline" as const }
        : {})
    }))
  }
}
