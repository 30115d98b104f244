/**
 * A composed message handed to nodemailer's SMTP pool through its transport interface (`send(mail,
 * callback)`, what nodemailer's Mailer calls): the pool reads the envelope, the Message-ID and a stream of
 * the bytes from `mail.message`. Through `sendMail` the Mailer would first build a MIME node around the
 * raw bytes, parse their addresses and make a random Message-ID of its own, per message, on the event loop.
 */
import type { Transporter } from "nodemailer"
import type Mail from "nodemailer/lib/mailer"
import type MailMessage from "nodemailer/lib/mailer/mail-message"
import SMTPPool from "nodemailer/lib/smtp-pool"
import { Readable } from "node:stream"
import type { Composed } from "./composeRaw.ts"

/** What the pool reads of a message: `mail.data` (options: none set here) and `mail.message`. */
const mailOf = (composed: Composed, messageId: string) => ({
  data: {},
  message: {
    getEnvelope: () => ({ from: composed.envelope.from, to: [...composed.envelope.to] }),
    messageId: () => messageId,
    getHeader: (name: string) => (name.toLowerCase() === "message-id" ? messageId : undefined),
    // A stream per attempt: the pool sends a message again over another connection when none of it was read.
    createReadStream: () => Readable.from([composed.raw], { objectMode: false })
  }
})

/**
 * Sends the bytes; resolves with the relay's reply, rejects with nodemailer's error. A transport that is
 * not a pool (SMTP_URL's `pool=false`) gets them through `sendMail`.
 */
export const sendRaw = (
  transport: Transporter,
  composed: Composed,
  messageId: string | undefined
): Promise<{ readonly response?: string }> => {
  const pool = transport.transporter
  if (!(pool instanceof SMTPPool)) return transport.sendMail({ envelope: composed.envelope as Mail.Envelope, raw: composed.raw })
  return new Promise((resolve, reject) => {
    const mail = mailOf(composed, messageId ?? "")
    pool.send(mail as unknown as MailMessage<SMTPPool.SentMessageInfo>, (error, info) => (error ? reject(error) : resolve(info ?? {})))
  })
}
