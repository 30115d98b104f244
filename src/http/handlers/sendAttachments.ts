/**
 * The attachments of a /v1/send request: checked (count, names, base64, MIME type, inline parts) and
 * made into what is stored with each email. An inline part (`disposition: "inline"`) is one the HTML
 * shows through `cid:<contentId>`; the sender puts such parts beside the HTML in multipart/related.
 */
import type { Attachment } from "../../store/Emails.ts"
import type { FieldError } from "../errors.ts"

export const MAX_ATTACHMENTS = 10
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}\s*$/
/**
 * A Content-ID as a body's `cid:` URL names it without escaping, and as a header carries it without
 * quoting: letters, digits and `. _ - + @` (`logo`, `logo.png@acme`, a UUID).
 */
const CONTENT_ID = /^[A-Za-z0-9._+@-]{1,200}$/

export interface AttachmentInput {
  readonly filename: string
  readonly content: string
  readonly contentType?: string | undefined
  readonly contentId?: string | undefined
  readonly disposition?: "attachment" | "inline" | undefined
}

/** The id without the angle brackets a Content-ID header writes around it (`<logo@acme>` is `logo@acme`). */
const bareContentId = (contentId: string) => contentId.trim().replace(/^<(.*)>$/, "$1")

export const decodedSize = (base64: string) => {
  const clean = base64.replace(/\s/g, "")
  return Math.floor((clean.length * 3) / 4) - (clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0)
}

const attachmentProblem = (attachment: AttachmentInput, field: string): FieldError | undefined => {
  if (attachment.filename.trim() === "" || /[\r\n\x00]/.test(attachment.filename) || attachment.filename.length > 255) {
    return { field: `${field}.filename`, message: "A file name of 1 to 255 characters without line breaks", code: "invalid_string" }
  }
  if (!BASE64.test(attachment.content)) return { field: `${field}.content`, message: "Expected base64 content", code: "invalid_string" }
  if (attachment.contentType !== undefined && !/^[\w.+-]+\/[\w.+-]+$/.test(attachment.contentType)) {
    return { field: `${field}.contentType`, message: "Expected a MIME type such as application/pdf", code: "invalid_string" }
  }
  if (attachment.contentId !== undefined && !CONTENT_ID.test(bareContentId(attachment.contentId))) {
    return {
      field: `${field}.contentId`,
      message:
        "A content id is 1 to 200 letters, digits and . _ - + @ (such as logo or logo.png@acme), referenced in the body as cid:<contentId>",
      code: "invalid_string",
      received: attachment.contentId
    }
  }
  if (attachment.disposition === "inline" && attachment.contentId === undefined) {
    return {
      field: `${field}.contentId`,
      message: "An inline attachment needs a contentId, which the body references as cid:<contentId>",
      code: "required"
    }
  }
  return undefined
}

export const attachmentProblems = (attachments: ReadonlyArray<AttachmentInput>): Array<FieldError> => {
  if (attachments.length > MAX_ATTACHMENTS) {
    return [{ field: "attachments", message: `At most ${MAX_ATTACHMENTS} attachments per email`, code: "too_big" }]
  }
  const seen = new Set<string>()
  return attachments.flatMap((attachment, index): Array<FieldError> => {
    const field = `attachments[${index}]`
    const problem = attachmentProblem(attachment, field)
    if (problem) return [problem]
    if (attachment.contentId === undefined) return []
    // Two parts under one Content-ID would leave the body's cid: reference ambiguous.
    const id = bareContentId(attachment.contentId)
    if (seen.has(id)) {
      return [{
        field: `${field}.contentId`,
        message: `Another attachment already has the content id ${id}`,
        code: "duplicate",
        received: attachment.contentId
      }]
    }
    seen.add(id)
    return []
  })
}

/**
 * An attachment as stored with each email: a part with a content id is inline unless it says otherwise
 * (it is there for the body to show); without one it is an ordinary attachment.
 */
export const toStoredAttachment = (attachment: AttachmentInput): Attachment => ({
  filename: attachment.filename,
  content: attachment.content,
  ...(attachment.contentType === undefined ? {} : { contentType: attachment.contentType }),
  ...(attachment.contentId === undefined
    ? {}
    : { contentId: bareContentId(attachment.contentId), disposition: attachment.disposition ?? "inline" })
})
