/**
 * A thread of the compose pool (src/mail/composePool.ts): builds each message it is handed (nodemailer's
 * MIME composer) and DKIM-signs it (nodemailer's signer, RSA in this thread), exactly as nodemailer does
 * on its way to a relay (its text/plain alternative made from the HTML first when asked), and answers with the message's bytes (CRLF line breaks) and its envelope.
 */
import nodemailer from "nodemailer"
import { parentPort } from "node:worker_threads"
import { composeRaw, type ComposeReply, type ComposeRequest } from "./composeRaw.ts"

// No stack traces here: only an error's message goes back to the caller, and Node's stream pipeline, which
// nodemailer builds each message with, makes an AbortError per message as it finishes (its stack walk was
// ~5 % of a compose thread's time in a campaign's profile).
Error.stackTraceLimit = 0

const port = parentPort!
const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })

const failed = (id: number, error: unknown) =>
  port.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies ComposeReply)

port.on("message", (request: ComposeRequest) => {
  composeRaw(transport, request.message, request.options).then(
    ({ raw, envelope }) => {
      // The bytes move to the caller's thread without a second copy; a slice of Node's shared buffer
      // pool cannot be transferred, so small messages get an ArrayBuffer of their own first.
      const bytes = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? raw : new Uint8Array(raw)
      port.postMessage({ id: request.id, raw: bytes, envelope } satisfies ComposeReply, [bytes.buffer as ArrayBuffer])
    },
    (error: unknown) => failed(request.id, error)
  ).catch((error: unknown) => failed(request.id, error))
})
