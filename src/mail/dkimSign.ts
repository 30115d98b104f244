/**
 * DKIM signing of a composed message in memory, with nodemailer's own parts (its header parser, relaxed
 * body hash and signature header): the bytes its streaming signer (nodemailer/lib/dkim) writes, the
 * DKIM-Signature line and the message unchanged, without the stream pipeline it builds per message,
 * which cost the compose threads more CPU than the RSA signature itself (BENCHMARKS.md, send).
 */
import type Mail from "nodemailer/lib/mailer"
import MessageParser from "nodemailer/lib/dkim/message-parser"
import RelaxedBody from "nodemailer/lib/dkim/relaxed-body"
import sign from "nodemailer/lib/dkim/sign"

const HASH = "sha256"
const LF = 0x0a
const CR = 0x0d

/** Where the header block ends (after its empty line), found as nodemailer's parser finds it; -1 without one. */
const headerEnd = (raw: Buffer): number => {
  for (let at = raw.indexOf(LF); at !== -1; at = raw.indexOf(LF, at + 1)) {
    if (at >= 1 && raw[at - 1] === LF) return at + 1
    if (at >= 2 && raw[at - 1] === CR && raw[at - 2] === LF) return at + 1
  }
  return -1
}

/** The relaxed body hash (base64), as nodemailer's RelaxedBody stream computes it on its way through. */
const bodyHash = (body: Buffer, hashAlgo: string): string => {
  const hasher = new RelaxedBody({ hashAlgo })
  let hash = ""
  hasher.once("hash", (value: string) => hash = value)
  hasher.updateHash(body)
  // Its end-of-body rules (trailing empty lines, a last line without a break), then the 'hash' event, at once.
  hasher._flush?.(() => undefined)
  return hash
}

type DkimOptions = NonNullable<Mail.Options["dkim"]>

/** Options with one key (domainName, keySelector, privateKey): what dkimSignRaw signs with; others are nodemailer's to sign. */
export const signsInMemory = (options: DkimOptions): boolean => options.keys === undefined && options.privateKey !== undefined

/**
 * The message signed with the options' one key (signsInMemory), or undefined when it has no header block
 * (the caller then leaves it to nodemailer). Like nodemailer's signer, a key the signature cannot be made
 * with leaves the message unsigned.
 */
export const dkimSignRaw = (raw: Buffer, options: DkimOptions): Buffer | undefined => {
  const end = headerEnd(raw)
  if (end === -1) return undefined
  const parser = new MessageParser()
  parser.rawHeaders = raw.subarray(0, end)
  const hashAlgo = options.hashAlgo ?? HASH
  const field = sign(parser.parseHeaders(), hashAlgo, bodyHash(raw.subarray(end), hashAlgo), {
    domainName: options.domainName,
    keySelector: options.keySelector,
    privateKey: options.privateKey,
    ...(options.headerFieldNames === undefined ? {} : { headerFieldNames: options.headerFieldNames }),
    ...(options.skipFields === undefined ? {} : { skipFields: options.skipFields })
  })
  return field === false ? raw : Buffer.concat([Buffer.from(`${field}\r\n`), raw])
}
