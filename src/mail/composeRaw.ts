/**
 * One message composed and signed by nodemailer, as bytes: what the compose pool's threads run
 * (src/mail/composeWorker.ts) and what runs on the event loop when the pool has no threads.
 */
import type { Transporter } from "nodemailer"
import type Mail from "nodemailer/lib/mailer"
import { dkimSignRaw, signsInMemory } from "./dkimSign.ts"
import { htmlToPlainText } from "./plainText.ts"

export interface Envelope {
  readonly from: string | false
  readonly to: ReadonlyArray<string>
}

export interface Composed {
  /** The whole message (CRLF line breaks), DKIM-Signature first when signed. */
  readonly raw: Buffer
  readonly envelope: Envelope
}

export interface ComposeOptions {
  /**
   * Make the text/plain alternative from the message's HTML here (none when the HTML has no text), so
   * the conversion runs in the compose thread rather than on the sender's event loop.
   */
  readonly textFromHtml?: boolean
}

export interface ComposeRequest {
  readonly id: number
  readonly message: Mail.Options
  readonly options: ComposeOptions
}

export type ComposeReply =
  | { readonly id: number; readonly raw: Buffer | Uint8Array; readonly envelope: Envelope; readonly error?: undefined }
  | { readonly id: number; readonly error: string }

/** The message with its text/plain alternative when asked for, the HTML has text and the message none yet. */
const completed = (message: Mail.Options, options: ComposeOptions): Mail.Options => {
  if (!options.textFromHtml || typeof message.html !== "string" || message.text !== undefined) return message
  const text = htmlToPlainText(message.html)
  return text === "" ? message : { ...message, text }
}

type Built = { message: Buffer; envelope: { from: string | false; to: Array<string> } }

/**
 * Composes through a buffering stream transport (`streamTransport: true, buffer: true`, no newline option),
 * then signs the bytes in memory (src/mail/dkimSign.ts); what cannot be signed so, nodemailer signs on the way.
 */
export const composeRaw = async (transport: Transporter, message: Mail.Options, options: ComposeOptions = {}): Promise<Composed> => {
  const full = completed(message, options)
  const { dkim, ...unsigned } = full
  const inMemory = dkim !== undefined && signsInMemory(dkim)
  const built = await transport.sendMail(inMemory ? unsigned : full) as unknown as Built
  const signed = inMemory ? dkimSignRaw(built.message, dkim) : built.message
  const info = signed === undefined ? await transport.sendMail(full) as unknown as Built : { ...built, message: signed }
  return { raw: info.message, envelope: { from: info.envelope.from, to: info.envelope.to } }
}
