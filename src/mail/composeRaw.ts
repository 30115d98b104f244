/**
 * One message composed and signed by nodemailer, as bytes: what the compose pool's threads run
 * (src/mail/composeWorker.ts) and what runs on the event loop when the pool has no threads.
 */
import type { Transporter } from "nodemailer"
import type Mail from "nodemailer/lib/mailer"

export interface Envelope {
  readonly from: string | false
  readonly to: ReadonlyArray<string>
}

export interface Composed {
  /** The whole message (CRLF line breaks), DKIM-Signature first when signed. */
  readonly raw: Buffer
  readonly envelope: Envelope
}

export interface ComposeRequest {
  readonly id: number
  readonly message: Mail.Options
}

export type ComposeReply =
  | { readonly id: number; readonly raw: Buffer | Uint8Array; readonly envelope: Envelope; readonly error?: undefined }
  | { readonly id: number; readonly error: string }

/** Composes through a buffering stream transport (`streamTransport: true, buffer: true`, no newline option). */
export const composeRaw = async (transport: Transporter, message: Mail.Options): Promise<Composed> => {
  const info = await transport.sendMail(message) as unknown as { message: Buffer; envelope: { from: string | false; to: Array<string> } }
  return { raw: info.message, envelope: { from: info.envelope.from, to: info.envelope.to } }
}
