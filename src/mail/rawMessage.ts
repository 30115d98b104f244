/**
 * A stored email as a message file: composed from the stored content by the sender's own composer
 * (src/mail/composeMessage.ts), dated when it was sent, without the DKIM signature the sender adds on the way
 * to the relay. What the Emails page shows and downloads.
 */
import MailComposer from "nodemailer/lib/mail-composer"
import type { EmailContent, EmailRow } from "../store/Emails.ts"
import { composeMessage } from "./composeMessage.ts"

type Addressing = Pick<EmailRow, "from_name" | "from_email" | "to_name" | "to_email" | "reply_to" | "message_id">

export const rawMessage = (row: Addressing, content: EmailContent, date: Date): Promise<Buffer> =>
  new MailComposer({ ...composeMessage(row, content, undefined), date }).compile().build()

/** The header lines of a message, in order, folded lines joined. */
export const headerLines = (raw: Buffer): Array<{ readonly name: string; readonly value: string }> => {
  const end = raw.indexOf("\r\n\r\n")
  const head = raw.subarray(0, end === -1 ? raw.length : end).toString("utf8")
  return head.replace(/\r\n[ \t]+/g, " ").split("\r\n").flatMap((line) => {
    const colon = line.indexOf(":")
    return colon <= 0 ? [] : [{ name: line.slice(0, colon), value: line.slice(colon + 1).trim() }]
  })
}
