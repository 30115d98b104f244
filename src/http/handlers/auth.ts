/** Sign-up, sign-in, sessions, verification, password reset, OAuth and invitations. */
import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
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
import { ApiError, rendered } from "../errors.ts"

const OAUTH_COOKIE = "mailstream_oauth"

export const userView = (user: User) => ({
  id: user.id,
  email: user.email,
  emailVerified: user.emailVerified,
  hasPassword: user.hasPassword,
  createdAt: user.createdAt.toISOString()
})

const invalidToken = new ApiError({
  status: 400,
  code: "INVALID_TOKEN",
  message: "The link is invalid, has expired or was already used",
  suggestion: "Ask for a new link."
})

const signupsDisabled = new ApiError({
  status: 403,
  code: "SIGNUPS_DISABLED",
  message: "Signups are disabled on this installation",
  suggestion: "Ask a project owner to invite you."
})

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", Effect.fnUntraced(function*(handlers) {
  const config = yield* AppConfig
  const users = yield* Users
  const members = yield* Members
  const projects = yield* Projects
  const tokens = yield* AccountTokens
  const throttle = yield* LoginThrottle
  const cookies = yield* SessionCookie
  const mail = yield* PlatformMail
  const oauth = yield* OAuth
  const sql = yield* SqlClient.SqlClient

  /** A session for the user, as the cookie on `response`. */
  const signIn = Effect.fnUntraced(function*(user: User, response: HttpServerResponse.HttpServerResponse) {
    const session = yield* users.createSession(user.id, config.sessionTtlHours)
    const token = yield* cookies.sign({ userId: user.id, sessionId: session.id }, session.expiresAt)
    return HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, token, cookies.options(config.sessionTtlHours * 3600))
  })

  const sendVerification = (user: User) =>
    Effect.flatMap(tokens.issue("verify_email", { userId: user.id, email: user.email, projectId: null, role: null }), (token) =>
      mail.send({
        to: user.email,
        subject: "Verify your email",
        text: `Open this link to verify your email address (valid for 48 hours):\n${mail.link("/verify-email", token)}`
      }))

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
        Effect.catchTag("EmailTaken", () => Effect.fail(ApiError.conflict("EMAIL_TAKEN", "This email already has an account")))
      )
      if (first) yield* settleFirstUser(members, projects, user.id)
      return user
    }))

  const clientAddressOf = clientAddressResolver(config.trustedProxies)

  const finishOAuth = Effect.fnUntraced(function*(provider: ProviderId, query: { code?: string | undefined; state?: string | undefined; error?: string | undefined }) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const failed = (message: string) => new ApiError({ status: 400, code: "OAUTH_FAILED", message })
    if (!oauth.providers.some((entry) => entry.id === provider)) return yield* ApiError.notFound("OAuth provider")
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
      // Linking by email is safe only because the provider verified it.
      if (user) yield* users.markVerified(user.id)
      else user = yield* createUser({ email: account.verifiedEmail, passwordHash: null, emailVerified: true, invited: false })
      yield* users.linkIdentity(user.id, provider, account.subject)
    }
    const response = HttpServerResponse.redirect(`${config.publicUrl}/`, { status: 302 }).pipe(
      HttpServerResponse.expireCookieUnsafe(OAUTH_COOKIE, { path: "/auth/oauth" })
    )
    return yield* signIn(user, response)
  })

  return handlers
    .handle("signup", ({ payload }) =>
      rendered(Effect.gen(function*() {
        const email = normalizeEmail(payload.email)
        const invitation = payload.inviteToken ? yield* tokens.peek("invitation", payload.inviteToken) : undefined
        if (payload.inviteToken && invitation?.email !== email) return yield* invalidToken
        const passwordHash = yield* hashPassword(payload.password)
        const user = yield* createUser({ email, passwordHash, emailVerified: invitation !== undefined, invited: invitation !== undefined })
        if (invitation && payload.inviteToken) {
          const grant = yield* tokens.consume("invitation", payload.inviteToken)
          if (grant?.projectId && grant.role) yield* members.add(grant.projectId, user.id, grant.role)
        } else {
          yield* sendVerification(user)
        }
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
          return yield* new ApiError({
            status: 429,
            code: "TOO_MANY_ATTEMPTS",
            message: "Too many failed sign-ins; try again later",
            details: { retryAfterSeconds: wait },
            headers: { "retry-after": String(wait) }
          })
        }
        // Verified even for an unknown email (against a dummy hash), so both failures take the same time.
        if (!(yield* verifyPassword(payload.password, user?.passwordHash)) || !user) {
          yield* throttle.recordFailure(attempt)
          return yield* new ApiError({ status: 401, code: "INVALID_CREDENTIALS", message: "Wrong email or password" })
        }
        yield* throttle.recordSuccess(attempt)
        const response = yield* rememberDevice(cookies, user.id, knownDevice, HttpServerResponse.jsonUnsafe({ user: userView(user) }))
        return yield* signIn(user, response)
      })))
    .handle("logout", () =>
      rendered(Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const claims = yield* cookies.verify(request.cookies[SESSION_COOKIE] ?? "")
        if (claims) yield* users.revokeSession(claims.sessionId)
        return HttpServerResponse.jsonUnsafe({ success: true }).pipe(
          HttpServerResponse.expireCookieUnsafe(SESSION_COOKIE, { path: "/", httpOnly: true, sameSite: "lax" })
        )
      })))
    .handle("oauthConfig", () =>
      Effect.succeed({
        providers: oauth.providers.map((provider) => ({ ...provider, url: `${config.publicUrl}/auth/oauth/${provider.id}` }))
      }))
    .handle("oauthStart", ({ params }) =>
      rendered(Effect.gen(function*() {
        const start = oauth.start(params.provider)
        if (!start) return yield* ApiError.notFound("OAuth provider")
        const { url, state, codeVerifier } = yield* start.pipe(
          Effect.mapError((error) => new ApiError({ status: 502, code: "OAUTH_PROVIDER_UNAVAILABLE", message: error.message }))
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
          return yield* new ApiError({
            status: 429,
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
        const grant = yield* tokens.consume("verify_email", payload.token)
        if (!grant?.userId) return yield* invalidToken
        yield* users.markVerified(grant.userId)
        return { success: true as const }
      })))
    .handle("requestPasswordReset", ({ payload }) =>
      rendered(Effect.gen(function*() {
        const user = yield* users.byEmail(normalizeEmail(payload.email))
        // The same answer whatever happens: an unknown email, or one mailed a link in the last minute, gets no mail.
        if (user && (yield* tokens.cooldown("reset_password", user.email)) === undefined) {
          const token = yield* tokens.issue("reset_password", { userId: user.id, email: user.email, projectId: null, role: null })
          yield* mail.send({
            to: user.email,
            subject: "Reset your password",
            text: `Open this link to choose a new password (valid for 1 hour):\n${mail.link("/reset-password", token)}\n\n` +
              "If you did not ask for it, ignore this message."
          })
        }
        return { success: true as const }
      })))
    .handle("resetPassword", ({ payload }) =>
      rendered(Effect.gen(function*() {
        const grant = yield* tokens.consume("reset_password", payload.token)
        if (!grant?.userId) return yield* invalidToken
        yield* users.setPassword(grant.userId, yield* hashPassword(payload.password))
        // The mail proved the address: verified too. Every session ends at once.
        yield* users.markVerified(grant.userId)
        yield* users.revokeAllSessions(grant.userId)
        return { success: true as const }
      })))
    .handle("acceptInvitation", ({ payload }) =>
      rendered(Effect.gen(function*() {
        const { user } = yield* CurrentUser
        const invitation = yield* tokens.peek("invitation", payload.token)
        if (!invitation?.projectId || !invitation.role) return yield* invalidToken
        if (invitation.email !== user.email) {
          return yield* new ApiError({ status: 403, code: "INVITATION_FOR_ANOTHER_EMAIL", message: "This invitation was sent to another email" })
        }
        const grant = yield* tokens.consume("invitation", payload.token)
        if (!grant?.projectId || !grant.role) return yield* invalidToken
        yield* members.add(grant.projectId, user.id, grant.role)
        yield* users.markVerified(user.id)
        return { projectId: grant.projectId, role: grant.role }
      })))
    .handle("me", () => Effect.map(CurrentUser, ({ user }) => userView(user)))
}))
