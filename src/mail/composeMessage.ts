/**
 * A queued email as nodemailer message options: what the sender hands to the transport (src/mail/Sender.ts)
 * and what the Emails page shows as a message file (src/mail/rawMessage.ts).
 */
import type { KeyObject } from "node:crypto"
import type Mail from "nodemailer/lib/mailer"
import type { EmailContent, EmailRow } from "../store/Emails.ts"
import type { SigningKey } from "../store/Domains.ts"
import { htmlToPlainText } from "./plainText.ts"
import { DKIM_SIGNED_HEADERS } from "./Transport.ts"

/** A verified domain's signing key, its private key parsed. */
export interface ParsedSigningKey extends Omit<SigningKey, "privateKey"> {
  readonly privateKey: KeyObject
}

/**
 * The message as handed to nodemailer: the HTML with its text/plain alternative (from the HTML as
 * stored, links tracked; none when the HTML has no text), made here, or by the composer when `text` says
 * so (the sender's: in the compose thread, off the event loop), DKIM-signed with the domain's key when
 * there is one (under local delivery an unverified domain has none: the message is not signed).
 */
export const composeMessage = (
  row: Pick<EmailRow, "from_name" | "from_email" | "to_name" | "to_email" | "reply_to" | "message_id">,
  content: EmailContent,
  key: ParsedSigningKey | undefined,
  text: "here" | "by the composer" = "here"
): Mail.Options => {
  const plain = text === "here" ? htmlToPlainText(content.html) : ""
  return {
    from: row.from_name ? { name: row.from_name, address: row.from_email } : row.from_email,
    to: row.to_name ? { name: row.to_name, address: row.to_email } : row.to_email,
    ...(row.reply_to ? { replyTo: row.reply_to } : {}),
    subject: content.subject,
    ...(plain === "" ? {} : { text: plain }),
    html: content.html,
    messageId: `<${row.message_id}>`,
    headers: content.headers,
    attachments: content.attachments.map((attachment) => ({
      filename: attachment.filename,
      content: attachment.content,
      encoding: "base64",
      ...(attachment.contentType ? { contentType: attachment.contentType } : {}),
      // With a cid nodemailer puts the part in multipart/related beside the HTML, under that Content-ID.
      ...(attachment.contentId ? { cid: attachment.contentId, contentDisposition: attachment.disposition ?? "inline" } : {})
    })),
    ...(key === undefined ? {} : {
      dkim: {
        domainName: key.domain,
        keySelector: key.selector,
        // nodemailer hands the key to crypto's sign(), which takes a KeyObject; its types say string.
        privateKey: key.privateKey as unknown as string,
        headerFieldNames: DKIM_SIGNED_HEADERS
      }
    })
  }
}
