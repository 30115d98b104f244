/** Sign-up, sign-in, sessions, verification, password reset, OAuth and invitations. */
import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { claimUnverifiedAccount } from "../../accounts/claim.ts"
import { settleFirstUser } from "../../accounts/firstUser.ts"
import { OAuth, type ProviderId } from "../../accounts/OAuth.ts"
import { DEVICE_COOKIE, recognizedDevice, rememberDevice } from "../../accounts/knownDevice.ts"
import { hashPassword, verifyPassword } from "../../accounts/Passwords.ts"
import { PlatformMail } from "../../accounts/PlatformMail.ts"
import { SESSION_COOKIE, SessionCookie } from "../../accounts/SessionCookie.ts"
import { AppConfig } from "../../config.ts"
import { normalizeEmail } from "../../domain/email.ts"
import type { User } from "../../domain/user.ts"
import { clientAddressResolver } from "../../lib/clientAddress.ts"
import { AccountTokens } from "../../store/AccountTokens.ts"
import { LoginThrottle } from "../../store/LoginThrottle.ts"
import { Members } from "../../store/Members.ts"
import { Projects } from "../../store/Projects.ts"
import { type StoredUser, Users } from "../../store/Users.ts"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { DashboardSessions } from "../session.ts"
import { BadGateway, BadRequest, Conflict, Forbidden, MethodNotAllowed, NotFound, RateLimited, Unauthorized } from "../api/statusErrors.ts"

const OAUTH_COOKIE = "mailstream_oauth"

export const userView = (user: User) => ({
  id: user.id,
  email: user.email,
  emailVerified: user.emailVerified,
  hasPassword: user.hasPassword,
  createdAt: user.createdAt.toISOString()
})

const invalidToken = new BadRequest({
  code: "INVALID_TOKEN",
  message: "The link is invalid, has expired or was already used",
  suggestion: "Ask for a new link."
})

const notVerifiedForOAuth = (provider: string) =>
  new Conflict({
    code: "EMAIL_NOT_VERIFIED",
    message: `An account with this email exists, but its address was never verified, so it is not joined to your ${provider} sign-in`,
    suggestion: "If you created it, sign in with its password and verify your email first. If you did not, ask for a " +
      "password reset: the link mailed to you takes the account over and ends whatever its creator had."
  })

const signupsDisabled = new Forbidden({
  code: "SIGNUPS_DISABLED",
  message: "Signups are disabled on this installation",
  suggestion: "Ask a project owner to invite you."
})

export const AuthHandlers = HttpApiBuilder.group(
  Api,
  "auth",
  Effect.fnUntraced(function*(handlers) {
    const config = yield* AppConfig
    const users = yield* Users
    const members = yield* Members
    const projects = yield* Projects
    const tokens = yield* AccountTokens
    const throttle = yield* LoginThrottle
    const cookies = yield* SessionCookie
    const mail = yield* PlatformMail
    const oauth = yield* OAuth
    const sessions = yield* DashboardSessions
    const sql = yield* SqlClient.SqlClient
    const stores = { users, tokens, members }

    /** A session for the user, as the cookie on `response`. */
    const signIn = Effect.fnUntraced(function*(user: User, response: HttpServerResponse.HttpServerResponse) {
      const session = yield* users.createSession(user.id, config.sessionTtlHours)
      const token = yield* cookies.sign({ userId: user.id, sessionId: session.id }, session.expiresAt)
      return HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, token, cookies.options(config.sessionTtlHours * 3600))
    })

    const sendVerification = (user: User) =>
      Effect.flatMap(
        tokens.issue("verify_email", { userId: user.id, email: user.email, projectId: null, role: null }),
        (token) =>
          mail.queue({
            to: user.email,
            subject: "Verify your email",
            text: `Open this link, signed in to your account, to verify your email address (valid for 48 hours):\n` +
              `${mail.link("/verify-email", token)}\n\nIf you did not create an account, ignore this message.`
          })
      )

    /**
     * A new user. The very first user of an installation owns every project created before anyone signed
     * up (CLI), or a first project; signups are otherwise subject to DISABLE_SIGNUPS unless `invited`.
     */
    const createUser = (input: { email: string; passwordHash: string | null; emailVerified: boolean; invited: boolean }) =>
      // One signup at a time decides who is first: two at once on an empty installation cannot both be.
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(hashtext('mailstream:signup'))`
        const first = (yield* users.count) === 0
        if (config.disableSignups && !first && !input.invited) return yield* signupsDisabled
        const user = yield* users.create(input).pipe(
          Effect.catchTag("EmailTaken", () => Effect.fail(Conflict.of("EMAIL_TAKEN", "This email already has an account")))
        )
        if (first) yield* settleFirstUser(members, projects, user.id)
        return user
      }))

    const clientAddressOf = clientAddressResolver(config.trustedProxies)

    const finishOAuth = Effect.fnUntraced(
      function*(provider: ProviderId, query: { code?: string | undefined; state?: string | undefined; error?: string | undefined }) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const failed = (message: string) => new BadRequest({ code: "OAUTH_FAILED", message })
        if (!oauth.providers.some((entry) => entry.id === provider)) return yield* NotFound.of("OAuth provider")
        if (query.error) return yield* failed(`The provider refused the sign-in: ${query.error}`)
        const [cookieProvider, state, codeVerifier] = (request.cookies[OAUTH_COOKIE] ?? "").split(".")
        if (!query.code || !query.state || cookieProvider !== provider || state !== query.state || !codeVerifier) {
          return yield* failed("The sign-in could not be matched to this browser (state mismatch); start again")
        }
        const account = yield* oauth.finish(provider, query.code, codeVerifier)!.pipe(
          Effect.tapError((error) => Effect.logWarning("OAuth sign-in failed", { provider, error: error.message })),
          Effect.mapError(() => failed("The provider did not confirm the sign-in"))
        )
        let user: StoredUser | undefined = yield* users.byIdentity(provider, account.subject)
        if (!user) {
          if (!account.verifiedEmail) return yield* failed("The provider account has no verified email")
          user = yield* users.byEmail(account.verifiedEmail)
          // Linking by email is safe only because the provider verified it, and only to an account whose holder
          // proved the address too: an unverified one may have been registered by anyone (pre-account takeover).
          if (user && !user.emailVerified) return yield* notVerifiedForOAuth(oauth.providers.find((entry) => entry.id === provider)!.name)
          user ??= yield* createUser({ email: account.verifiedEmail, passwordHash: null, emailVerified: true, invited: false })
          yield* users.linkIdentity(user.id, provider, account.subject)
        }
        const response = HttpServerResponse.redirect(`${config.publicUrl}/`, { status: 302 }).pipe(
          HttpServerResponse.expireCookieUnsafe(OAUTH_COOKIE, { path: "/auth/oauth" })
        )
        return yield* signIn(user, response)
      }
    )

    return handlers
      .handle("signup", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const email = normalizeEmail(payload.email)
          const invitation = payload.inviteToken ? yield* tokens.peek("invitation", payload.inviteToken) : undefined
          if (payload.inviteToken && invitation?.email !== email) return yield* invalidToken
          const passwordHash = yield* hashPassword(payload.password)
          // An invitation lets them in and into its project, but does not verify the email: the inviter can copy its link.
          const user = yield* createUser({ email, passwordHash, emailVerified: false, invited: invitation !== undefined })
          if (invitation && payload.inviteToken) {
            const grant = yield* tokens.consume("invitation", payload.inviteToken)
            if (grant?.projectId && grant.role) yield* members.add(grant.projectId, user.id, grant.role)
          }
          yield* sendVerification(user)
          return yield* signIn(user, HttpServerResponse.jsonUnsafe({ user: userView(user) }, { status: 201 }))
        })))
      .handle("login", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const email = normalizeEmail(payload.email)
          const user = yield* users.byEmail(email)
          const knownDevice = yield* recognizedDevice(cookies, request.cookies[DEVICE_COOKIE], user?.id)
          const address = clientAddressOf(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-for"])
          const attempt = { email, address, knownDevice }
          const wait = yield* throttle.retryAfter(attempt)
          if (wait !== undefined) {
            return yield* new RateLimited({
              code: "TOO_MANY_ATTEMPTS",
              message: "Too many failed sign-ins; try again later",
              details: { retryAfterSeconds: wait },
              headers: { "retry-after": String(wait) }
            })
          }
          // Verified even for an unknown email (against a dummy hash), so both failures take the same time.
          if (!(yield* verifyPassword(payload.password, user?.passwordHash)) || !user) {
            yield* throttle.recordFailure(attempt)
            return yield* new Unauthorized({ code: "INVALID_CREDENTIALS", message: "Wrong email or password" })
          }
          yield* throttle.recordSuccess(attempt)
          const response = yield* rememberDevice(cookies, user.id, knownDevice, HttpServerResponse.jsonUnsafe({ user: userView(user) }))
          return yield* signIn(user, response)
        })))
      .handle("logout", () =>
        rendered(Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const claims = yield* cookies.verify(request.cookies[SESSION_COOKIE] ?? "")
          if (claims) {
            // Another site must not end the session (nor clear the cookie) any more than change anything else.
            yield* sessions.requireSameOrigin
            yield* users.revokeSession(claims.sessionId)
          }
          return HttpServerResponse.jsonUnsafe({ success: true }).pipe(
            HttpServerResponse.expireCookieUnsafe(SESSION_COOKIE, { path: "/", httpOnly: true, sameSite: "lax" })
          )
        })))
      .handle("logoutByGet", () =>
        rendered(Effect.fail(
          new MethodNotAllowed({
            code: "METHOD_NOT_ALLOWED",
            message: "Sign out with POST /auth/logout",
            suggestion: "A GET must not change anything: any page could sign you out with a link or an image.",
            headers: { allow: "POST" }
          })
        )))
      .handle("oauthConfig", () =>
        Effect.succeed({
          providers: oauth.providers.map((provider) => ({ ...provider, url: `${config.publicUrl}/auth/oauth/${provider.id}` }))
        }))
      .handle("oauthStart", ({ params }) =>
        rendered(Effect.gen(function*() {
          const start = oauth.start(params.provider)
          if (!start) return yield* NotFound.of("OAuth provider")
          const { url, state, codeVerifier } = yield* start.pipe(
            Effect.mapError((error) => new BadGateway({ code: "OAUTH_PROVIDER_UNAVAILABLE", message: error.message }))
          )
          return HttpServerResponse.redirect(url, { status: 302 }).pipe(
            HttpServerResponse.setCookieUnsafe(OAUTH_COOKIE, `${params.provider}.${state}.${codeVerifier}`, {
              ...cookies.options(600),
              path: "/auth/oauth"
            })
          )
        })))
      .handle("oauthCallback", ({ params, query }) => rendered(finishOAuth(params.provider, query)))
      .handle("requestVerification", () =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          if (user.emailVerified) return { success: true as const }
          const wait = yield* tokens.cooldown("verify_email", user.email)
          if (wait !== undefined) {
            return yield* new RateLimited({
              code: "TOO_MANY_REQUESTS",
              message: "A verification link was mailed less than a minute ago",
              headers: { "retry-after": String(wait) }
            })
          }
          yield* sendVerification(user)
          return { success: true as const }
        })))
      .handle("verifyEmail", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const grant = yield* tokens.peek("verify_email", payload.token)
          if (!grant?.userId) return yield* invalidToken
          // The link proves the mailbox, the session the password: both must be the same account's.
          if (grant.userId !== user.id || grant.email !== user.email) {
            return yield* new Forbidden({
              code: "VERIFICATION_FOR_ANOTHER_ACCOUNT",
              message: "This link verifies another account",
              suggestion: "Sign in to the account the link was mailed for, then open it again."
            })
          }
          if (!(yield* tokens.consume("verify_email", payload.token))) return yield* invalidToken
          yield* users.markVerified(user.id)
          return { success: true as const }
        })))
      .handle("requestPasswordReset", ({ payload }) =>
        // Only queued: whether the email has an account, and whether it was mailed a link in the last minute, is
        // decided after the answer (PlatformMail), so the answer and its timing say nothing about either.
        rendered(Effect.as(mail.queuePasswordReset(normalizeEmail(payload.email)), { success: true as const })))
      .handle("resetPassword", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const passwordHash = yield* hashPassword(payload.password)
          return yield* sql.withTransaction(Effect.gen(function*() {
            const grant = yield* tokens.consume("reset_password", payload.token)
            const user = grant?.userId ? yield* users.byId(grant.userId) : undefined
            if (!user) return yield* invalidToken
            // The mail proved the address. An account whose holder never did is taken over, not just given a password.
            if (!user.emailVerified) yield* claimUnverifiedAccount(stores, user.id)
            yield* users.setPassword(user.id, passwordHash)
            yield* users.markVerified(user.id)
            // Every session ends at once, and every other reset link mailed to them stops working.
            yield* users.revokeAllSessions(user.id)
            yield* tokens.spendAll(user.id, ["reset_password"])
            return { success: true as const }
          }))
        })))
      .handle("changePassword", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const { user, sessionId } = yield* CurrentUser
          const stored = yield* users.byId(user.id)
          if (!stored?.passwordHash) {
            return yield* Conflict.of("NO_PASSWORD", "This account signs in through a provider and has no password to change")
          }
          if (!(yield* verifyPassword(payload.currentPassword, stored.passwordHash))) {
            return yield* new Forbidden({ code: "WRONG_PASSWORD", message: "The current password is not right" })
          }
          const passwordHash = yield* hashPassword(payload.newPassword)
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* users.setPassword(user.id, passwordHash)
            // Whoever else was signed in, or holds a reset link, is out: the password was changed for a reason.
            yield* users.revokeOtherSessions(user.id, sessionId)
            yield* tokens.spendAll(user.id, ["reset_password"])
          }))
          return { success: true as const }
        })))
      .handle("acceptInvitation", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const invitation = yield* tokens.peek("invitation", payload.token)
          if (!invitation?.projectId || !invitation.role) return yield* invalidToken
          if (invitation.email !== user.email) {
            return yield* new Forbidden({
              code: "INVITATION_FOR_ANOTHER_EMAIL",
              message: "This invitation was sent to another email"
            })
          }
          const grant = yield* tokens.consume("invitation", payload.token)
          if (!grant?.projectId || !grant.role) return yield* invalidToken
          // Joining does not verify the email: the inviter may have passed the link on rather than mail it.
          yield* members.add(grant.projectId, user.id, grant.role)
          return { projectId: grant.projectId, role: grant.role }
        })))
      .handle("me", () => Effect.map(CurrentUser, ({ user }) => userView(user)))
  })
)
