/** Sign-up, sign-in, sessions, email verification, password reset, OAuth and invitations (dashboard). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { bodyErrors, ErrorDocs, inputErrors, serverErrors } from "./errors.ts"
import { Email, Text, Timestamp } from "./schemas.ts"
import { SessionAuth } from "./security.ts"

export const UserView = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  emailVerified: Schema.Boolean,
  hasPassword: Schema.Boolean,
  createdAt: Timestamp
}).annotate({ identifier: "User" })

const Password = Text.check(Schema.isMinLength(8), Schema.isMaxLength(256)).annotate({ description: "8 to 256 characters" })
const Token = Text.check(Schema.isNonEmpty(), Schema.isMaxLength(200))
const Ok = Schema.Struct({ success: Schema.Literal(true) })
const UserBody = Schema.Struct({ user: UserView })

const OAuthProvider = Schema.Literals(["github", "google"])

const tooManyAttempts = ErrorDocs.rateLimited
/** Behind the session cookie: no session, a refused origin, the per-user rate limit. */
const sessionErrors = [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ...serverErrors] as const
const unauthorized = ErrorDocs.unauthorized
const forbidden = ErrorDocs.forbidden

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("signup", "/auth/signup", {
      payload: Schema.Struct({
        email: Email,
        password: Password,
        inviteToken: Schema.optional(Token).annotate({ description: "The token of a project invitation mailed to this email" })
      }),
      success: UserBody.pipe(HttpApiSchema.status(201)),
      error: [...bodyErrors, forbidden, ErrorDocs.conflict, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Creates an account and signs it in (sets the session cookie). 403 SIGNUPS_DISABLED when DISABLE_SIGNUPS is true, " +
        "except for the very first user of an empty installation (who becomes the owner of a first project) and for an " +
        "invited email with its inviteToken. 409 EMAIL_TAKEN when the email has an account."
    ),
    HttpApiEndpoint.post("login", "/auth/login", {
      payload: Schema.Struct({ email: Email, password: Text.check(Schema.isMaxLength(256)) }),
      success: UserBody,
      error: [...bodyErrors, unauthorized, tooManyAttempts, forbidden, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Signs in and sets the session cookie, and the known-device cookie (mailstream_device, a year, sent only to " +
        "/auth/login). A wrong password and an unknown email both answer 401 INVALID_CREDENTIALS (in the same time). " +
        "Within 15 minutes, after 5 failures for one email from browsers without its known-device cookie, or 20 from one " +
        "client address (behind TRUSTED_PROXIES, the one X-Forwarded-For names), those answer 429 TOO_MANY_ATTEMPTS with " +
        "Retry-After; a browser with the cookie is held only to its own 5 failures."
    ),
    HttpApiEndpoint.get("logout", "/auth/logout", { success: Ok, error: serverErrors }).annotate(
      OpenApi.Description,
      "Revokes the session (at once, on every api process) and clears the cookie."
    ),
    HttpApiEndpoint.get("oauthConfig", "/auth/oauth-config", {
      success: Schema.Struct({
        providers: Schema.Array(Schema.Struct({ id: OAuthProvider, name: Schema.String, url: Schema.String }))
      }),
      error: serverErrors
    }).annotate(OpenApi.Description, "The OAuth providers configured on this installation; `url` starts the sign-in."),
    HttpApiEndpoint.get("oauthStart", "/auth/oauth/:provider", {
      params: { provider: OAuthProvider },
      success: HttpApiSchema.Empty(302),
      error: [ErrorDocs.notFound, ...inputErrors, ...serverErrors]
    }).annotate(OpenApi.Description, "Redirects to the provider's consent page (404 when the provider is not configured)."),
    HttpApiEndpoint.get("oauthCallback", "/auth/oauth/:provider/callback", {
      params: { provider: OAuthProvider },
      query: { code: Schema.optional(Text), state: Schema.optional(Text), error: Schema.optional(Text) },
      success: HttpApiSchema.Empty(302),
      error: [ErrorDocs.badRequest, unauthorized, ErrorDocs.notFound, ...inputErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Where the provider sends the browser back. Signs in the user linked to the provider account, or the user with " +
        "the provider's verified email (linking them), or creates one (subject to DISABLE_SIGNUPS); then redirects to PUBLIC_URL."
    ),
    HttpApiEndpoint.post("requestVerification", "/auth/request-verification", {
      success: Ok,
      error: sessionErrors
    }).middleware(SessionAuth).annotate(
      OpenApi.Description,
      "Mails the signed-in user a single-use verification link (valid 48 hours) from PLATFORM_FROM; at most one a minute (429 TOO_MANY_REQUESTS with Retry-After)."
    ),
    HttpApiEndpoint.post("verifyEmail", "/auth/verify-email", {
      payload: Schema.Struct({ token: Token }),
      success: Ok,
      error: [...bodyErrors, ...serverErrors]
    }).annotate(OpenApi.Description, "Marks the email verified. 400 INVALID_TOKEN for an unknown, expired or used token."),
    HttpApiEndpoint.post("requestPasswordReset", "/auth/request-password-reset", {
      payload: Schema.Struct({ email: Email }),
      success: Ok,
      error: [...bodyErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Mails a single-use reset link (valid 1 hour) if the email has an account, at most one a minute; the answer is the same either way."
    ),
    HttpApiEndpoint.post("resetPassword", "/auth/reset-password", {
      payload: Schema.Struct({ token: Token, password: Password }),
      success: Ok,
      error: [...bodyErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Sets a new password and revokes every session of the user. 400 INVALID_TOKEN for an unknown, expired or used token."
    ),
    HttpApiEndpoint.post("acceptInvitation", "/auth/accept-invitation", {
      payload: Schema.Struct({ token: Token }),
      success: Schema.Struct({ projectId: Schema.String, role: Schema.String }),
      error: [...bodyErrors, ...sessionErrors]
    }).middleware(SessionAuth).annotate(
      OpenApi.Description,
      "Joins the project of an invitation addressed to the signed-in user's email (403 INVITATION_FOR_ANOTHER_EMAIL otherwise)."
    ),
    HttpApiEndpoint.get("me", "/users/@me", { success: UserView, error: sessionErrors }).middleware(SessionAuth)
  )
  .annotateMerge(OpenApi.annotations({
    title: "Authentication",
    description: "Dashboard accounts and sessions (cookie `mailstream_session`). API keys are not accepted here."
  }))
{}
