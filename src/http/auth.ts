/**
 * The key-checking middleware behind SecretKeyAuth and PublicKeyAuth: resolves the project from the
 * bearer key, enforces the key type of the endpoint (both mismatches are 401 INVALID_API_KEY), then
 * applies the per-project rate limit. SecretKeyAuth also takes the dashboard's session cookie with an
 * `X-Project-Id` header: the user's membership and role decide (src/http/session.ts).
 */
import { Effect, Layer, Redacted } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { AppConfig } from "../config.ts"
import { permissionForEndpoint, sendsMail } from "../domain/permissions.ts"
import { type AuthenticatedKey, type KeyKind, type Project, Projects } from "../store/Projects.ts"
import { CurrentProject, PublicKeyAuth, SecretKeyAuth } from "./api/security.ts"
import { rendered } from "./errors.ts"
import { enforceRateLimit } from "./rateLimited.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { DashboardSessions } from "./session.ts"
import { BadRequest, Forbidden, isStatusError, Unauthorized } from "./api/statusErrors.ts"

export { enforceRateLimit } from "./rateLimited.ts"

const projectDisabled = new Forbidden({
  code: "PROJECT_DISABLED",
  message: "This project is disabled",
  suggestion: "An owner can see why under /users/@me/projects/:id/security and re-enable it."
})

/**
 * What a presented key of the `required` kind gets, once authenticated: its project (enabled), or the
 * envelope's 401/403. Shared by the key check and the track fast path (plain code, cache hits).
 */
export const keyVerdict = (auth: AuthenticatedKey | undefined, required: KeyKind): Project | Unauthorized | Forbidden => {
  if (!auth) return Unauthorized.invalidApiKey("Invalid API key")
  if (auth.kind !== required) {
    return Unauthorized.invalidApiKey(
      required === "public"
        ? "This endpoint takes the project's public key (pk_); the secret key is rejected here"
        : "This endpoint takes the project's secret key (sk_); the public key only works on /v1/track and /v1/track/batch"
    )
  }
  return auth.project.disabled ? projectDisabled : auth.project
}

/**
 * Runs `effect` as the project whose `required` kind of key was presented (the bearer credential), or
 * fails with the envelope's 401/403/429. Shared by the middleware and the track fast path.
 */
export const makeKeyCheck = Effect.fnUntraced(function*(required: KeyKind) {
  const projects = yield* Projects
  const rateLimiter = yield* RateLimiter
  return <A, E, R>(effect: Effect.Effect<A, E, R>, presentedKey: string) =>
    Effect.gen(function*() {
      const key = presentedKey.trim()
      if (key === "") return yield* Unauthorized.invalidApiKey("Missing API key")
      const verdict = keyVerdict(yield* rendered(projects.authenticate(key)), required)
      if (isStatusError(verdict)) return yield* verdict
      return yield* admit(rateLimiter, verdict, effect)
    })
})

/** What `makeKeyCheck` builds: the check of one request's presented key. */
type KeyCheck = Effect.Success<ReturnType<typeof makeKeyCheck>>

/** The key check as HttpApi's security middleware: the credential comes decoded from the bearer header. */
const asMiddleware = (check: KeyCheck) =>
<E, R>(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  { credential }: { readonly credential: Redacted.Redacted<string> }
) => rendered(check(httpEffect, Redacted.value(credential)))

/** The checks after authentication, whatever the credential: a disabled project, the rate limit. */
const admit = <A, E, R>(
  rateLimiter: RateLimiter["Service"],
  project: Project,
  httpEffect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    if (project.disabled) return yield* projectDisabled
    yield* enforceRateLimit(yield* rateLimiter.check(project.id))
    return yield* Effect.provideService(httpEffect, CurrentProject, project)
  })

/**
 * The session variant of SecretKeyAuth: cookie + X-Project-Id. Without a cookie the key check answers,
 * so a bad bearer key still gets its own 401.
 */
const makeSessionCheck = Effect.fnUntraced(function*(keyCheck: KeyCheck) {
  const sessions = yield* DashboardSessions
  const rateLimiter = yield* RateLimiter
  const config = yield* AppConfig
  return <E, R>(
    httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    options: {
      readonly credential: Redacted.Redacted<string>
      readonly endpoint: { readonly identifier: string }
      readonly group: { readonly identifier: string }
    }
  ) =>
    rendered(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const cookie = Redacted.value(options.credential)
      if (cookie === "") {
        const bearer = request.headers.authorization?.replace(/^Bearer\s+/i, "") ?? ""
        return yield* keyCheck(httpEffect, bearer)
      }
      const { user } = yield* rendered(sessions.resolve(cookie))
      const projectId = request.headers["x-project-id"]?.trim() ?? ""
      if (projectId === "") {
        return yield* BadRequest.of("Send the project's id in the X-Project-Id header with the session cookie", "PROJECT_ID_REQUIRED")
      }
      const group = options.group.identifier
      const { project } = yield* rendered(sessions.access(user.id, projectId, permissionForEndpoint(group, options.endpoint.identifier)))
      if (config.requireEmailVerification && !user.emailVerified && sendsMail(group, options.endpoint.identifier)) {
        return yield* new Forbidden({
          code: "EMAIL_VERIFICATION_REQUIRED",
          message: "Verify your email before sending",
          suggestion: "Open the link mailed to you, or ask for a new one with POST /auth/request-verification."
        })
      }
      return yield* admit(rateLimiter, { id: project.id, name: project.name, disabled: project.disabled }, httpEffect)
    }))
})

export const SecretKeyAuthLive = Layer.effect(
  SecretKeyAuth,
  Effect.gen(function*() {
    const check = yield* makeKeyCheck("secret")
    const session = yield* makeSessionCheck(check)
    return SecretKeyAuth.of({ secretKey: asMiddleware(check), session })
  })
)

export const PublicKeyAuthLive = Layer.effect(
  PublicKeyAuth,
  Effect.map(makeKeyCheck("public"), (check) => PublicKeyAuth.of({ publicKey: asMiddleware(check) }))
)
