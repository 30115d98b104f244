import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { bodyErrors, commonErrors } from "./errors.ts"
import { SecretKeyAuth } from "./security.ts"

const flag = (description: string) => Schema.Boolean.annotate({ description })

export const VerificationResult = Schema.Struct({
  email: Schema.String.annotate({ description: "The address as checked: trimmed, lower case, an IDN domain in its ASCII (xn--) form" }),
  valid: flag("Syntactically valid, not disposable, and the domain exists and can receive mail"),
  isDisposable: flag("The domain is a disposable (throw-away) email service"),
  isAlias: flag(
    "The domain is an alias / relay service (Apple Hide My Email, Firefox Relay, SimpleLogin, addy.io, DuckDuckGo, Proton Pass, ...)"
  ),
  isTypo: flag("The domain looks like a misspelling of a popular one; see suggestedEmail"),
  isPlusAddressed: flag("The local part carries a +tag"),
  isPersonalEmail: flag("The domain is a personal / free mail provider"),
  domainExists: flag("DNS knows the domain"),
  hasWebsite: flag("The domain has an A or AAAA record (DNS only; the site is not fetched)"),
  hasMxRecords: flag("The domain has MX records, or no MX but an address that serves as its implicit MX (RFC 5321), noted in reasons"),
  reasons: Schema.Array(Schema.String).annotate({
    description: "Plain words for every flag that counts against the address, including unanswered DNS lookups"
  }),
  suggestedEmail: Schema.optional(Schema.String).annotate({ description: "The corrected address, when isTypo" })
}).annotate({ identifier: "EmailVerification" })

export class VerifyApi extends HttpApiGroup.make("verify", { topLevel: true })
  .add(
    HttpApiEndpoint.post("verify", "/v1/verify", {
      payload: Schema.Struct({
        // Any string: nothing is stored, and a malformed address (NUL included) answers valid:false with a reason.
        email: Schema.String.annotate({ description: "The address to check; a malformed one answers valid:false with a reason" })
      }),
      success: Schema.Struct({ success: Schema.Literal(true), data: VerificationResult }),
      error: [...commonErrors, ...bodyErrors]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Verification",
    description: "Check an email address: syntax, disposable / alias / personal domains, typos, plus-addressing, " +
      "and the domain's NS, MX, A and AAAA records (DNS only, cached per domain for a few minutes)."
  }))
{}
