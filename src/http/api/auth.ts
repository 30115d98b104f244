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
      "Creates an account and signs it in (sets the session cookie); a verification link is mailed. 403 SIGNUPS_DISABLED " +
        "when DISABLE_SIGNUPS is true, except for the very first user of an empty installation (who becomes the owner of " +
        "a first project) and for an invited email with its inviteToken (which joins the invitation's project). 409 " +
        "EMAIL_TAKEN when the email has an account."
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
    HttpApiEndpoint.post("logout", "/auth/logout", { success: Ok, error: [forbidden, ...serverErrors] }).annotate(
      OpenApi.Description,
      "Revokes the session (at once, on every api process) and clears the cookie. With a session cookie it must come " +
        "from the dashboard's origin, like every cookie-authenticated change (403 CSRF_REJECTED), so another site " +
        "cannot sign a user out. Without a valid session it only clears the cookie."
    ),
    // Logout used to be a GET, which any page could trigger (an <img>); kept to say so, outside the document.
    HttpApiEndpoint.get("logoutByGet", "/auth/logout", { success: Ok, error: [ErrorDocs.methodNotAllowed, ...serverErrors] }).annotate(
      OpenApi.Exclude,
      true
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
      error: [ErrorDocs.notFound, ErrorDocs.badGateway, ...inputErrors, ...serverErrors]
    }).annotate(OpenApi.Description, "Redirects to the provider's consent page (404 when the provider is not configured)."),
    HttpApiEndpoint.get("oauthCallback", "/auth/oauth/:provider/callback", {
      params: { provider: OAuthProvider },
      query: { code: Schema.optional(Text), state: Schema.optional(Text), error: Schema.optional(Text) },
      success: HttpApiSchema.Empty(302),
      error: [ErrorDocs.badRequest, unauthorized, forbidden, ErrorDocs.notFound, ErrorDocs.conflict, ...inputErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Where the provider sends the browser back. Signs in the user linked to the provider account, or the user with " +
        "the provider's verified email (linking them), or creates one (subject to DISABLE_SIGNUPS); then redirects to " +
        "PUBLIC_URL. An account with that email whose address was never verified is not linked (409 EMAIL_NOT_VERIFIED): " +
        "whoever chose its password never proved the address, so its owner verifies it first (signed in) or takes the " +
        "account over with a password reset."
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
      error: [...bodyErrors, ...sessionErrors]
    }).middleware(SessionAuth).annotate(
      OpenApi.Description,
      "Marks the signed-in user's email verified. The link proves the mailbox and the session proves the password: a " +
        "verification opened without the account's session (someone who received a mail for an account they did not " +
        "create) must not vouch for whoever chose that password. 400 INVALID_TOKEN for an unknown, expired or used " +
        "token; 403 VERIFICATION_FOR_ANOTHER_ACCOUNT for a link of another account."
    ),
    HttpApiEndpoint.post("requestPasswordReset", "/auth/request-password-reset", {
      payload: Schema.Struct({ email: Email }),
      success: Ok,
      error: [...bodyErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Mails a single-use reset link (valid 1 hour) if the email has an account, at most one a minute. The answer is the " +
        "same, and takes the same time, either way: the request is queued and the mail decided and sent after the answer."
    ),
    HttpApiEndpoint.post("resetPassword", "/auth/reset-password", {
      payload: Schema.Struct({ token: Token, password: Password }),
      success: Ok,
      error: [...bodyErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Sets a new password, revokes every session of the user and spends every reset link mailed to them. The link proves " +
        "the address: an account whose email was never verified is taken over (its linked sign-ins and other links end, and " +
        "it leaves every project its creator was in). 400 INVALID_TOKEN for an unknown, expired or used token."
    ),
    HttpApiEndpoint.post("changePassword", "/auth/change-password", {
      payload: Schema.Struct({ currentPassword: Text.check(Schema.isMaxLength(256)), newPassword: Password }),
      success: Ok,
      error: [...bodyErrors, ...sessionErrors, ErrorDocs.conflict]
    }).middleware(SessionAuth).annotate(
      OpenApi.Description,
      "Changes the signed-in user's password: every other session ends and every reset link mailed to them is spent. " +
        "403 WRONG_PASSWORD when currentPassword is not the password; 409 NO_PASSWORD for an account that signs in only " +
        "through a provider (it sets one with a password reset)."
    ),
    HttpApiEndpoint.post("acceptInvitation", "/auth/accept-invitation", {
      payload: Schema.Struct({ token: Token }),
      success: Schema.Struct({ projectId: Schema.String, role: Schema.String }),
      error: [...bodyErrors, ...sessionErrors]
    }).middleware(SessionAuth).annotate(
      OpenApi.Description,
      "Joins the project of an invitation addressed to the signed-in user's email (403 INVITATION_FOR_ANOTHER_EMAIL " +
        "otherwise). The link is the inviter's choice of who joins; it does not verify the email (the inviter can copy it)."
    ),
    HttpApiEndpoint.get("me", "/users/@me", { success: UserView, error: sessionErrors }).middleware(SessionAuth)
  )
  .annotateMerge(OpenApi.annotations({
    title: "Authentication",
    description: "Dashboard accounts and sessions (cookie `mailstream_session`). API keys are not accepted here."
  }))
{}
