/** Rules for a message's subject, body and sender, shared by templates, campaigns and /v1/send. */
import { Effect } from "effect"
import { AppConfig } from "../../config.ts"
import { requiresVerifiedDomain } from "../../domain/delivery.ts"
import { templateSyntaxProblem } from "../../mail/render.ts"
import { Domains } from "../../store/Domains.ts"
import { type FieldError } from "../errors.ts"
import { Forbidden } from "../api/statusErrors.ts"

export const MAX_SUBJECT_LENGTH = 998

/** Subject rule shared with /v1/send: 1..998 characters, no line breaks. */
export const subjectProblem = (field: string, subject: string): FieldError | undefined =>
  subject.trim().length === 0
    ? { field, message: "The subject must not be empty", code: "too_small" }
    : subject.length > MAX_SUBJECT_LENGTH
    ? { field, message: `The subject must be at most ${MAX_SUBJECT_LENGTH} characters`, code: "too_big" }
    : /[\r\n]/.test(subject)
    ? { field, message: "The subject must not contain line breaks", code: "invalid_string" }
    : undefined

/** A template that does not parse is refused when saved, not when mail is sent. */
export const syntaxProblem = (field: string, source: string, kind: "html" | "text"): FieldError | undefined => {
  const message = templateSyntaxProblem(source, kind)
  return message === undefined ? undefined : { field, message, code: "invalid_template" }
}

/**
 * The sender-domain rule: with a relay configured, sending (and saving what will be sent) needs the
 * domain verified, the spec's 403 otherwise; under local delivery (no SMTP_URL) nothing leaves the
 * machine, so any domain will do (src/domain/delivery.ts).
 */
export const verifiedDomainRule = Effect.gen(function*() {
  const domains = yield* Domains
  const enforced = requiresVerifiedDomain(yield* AppConfig)
  return Effect.fnUntraced(function*(projectId: string, from: string) {
    if (!enforced) return
    const domain = from.slice(from.lastIndexOf("@") + 1)
    const key = yield* domains.signingKey(projectId, domain)
    if (!key) return yield* Forbidden.unverifiedDomain(domain)
  })
})
