/**
 * Dashboard sessions on the HTTP side: the cookie → signed-in user (JWT checked, then the session row,
 * so a revoked session stops at once), the same-origin rule for cookie-authenticated requests that
 * change state (CSRF), and the one place a user's access to a project is decided (membership, then
 * the permission matrix of src/domain/permissions.ts). A non-member gets 404, as for a missing project.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { SessionCookie } from "../accounts/SessionCookie.ts"
import { AppConfig } from "../config.ts"
import { isUuid } from "../domain/ids.ts"
import { allows, type Permission, type Role } from "../domain/permissions.ts"
import type { SessionUser } from "../domain/user.ts"
import { Members } from "../store/Members.ts"
import { type ProjectDetails, Projects } from "../store/Projects.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import { Users } from "../store/Users.ts"
import { CurrentUser, SessionAuth } from "./api/security.ts"
import { rendered } from "./errors.ts"
import { enforceRateLimit } from "./rateLimited.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { Forbidden, NotFound, Unauthorized } from "./api/statusErrors.ts"

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

export interface ProjectAccess {
  readonly project: ProjectDetails
  readonly role: Role
}

const toSessionUser = (
  user: { id: string; email: string; emailVerified: boolean; hasPassword: boolean; createdAt: Date },
  sessionId: string
): SessionUser => ({
  user: { id: user.id, email: user.email, emailVerified: user.emailVerified, hasPassword: user.hasPassword, createdAt: user.createdAt },
  sessionId
})

export class DashboardSessions extends Context.Service<DashboardSessions, {
  /**
   * The user of a session cookie value, refusing a cookie-authenticated request that changes state
   * from another origin. Fails 401 UNAUTHENTICATED for a missing, invalid, expired or revoked session.
   */
  readonly resolve: (
    cookie: string
  ) => Effect.Effect<SessionUser, Unauthorized | Forbidden | PersistenceError, HttpServerRequest.HttpServerRequest>
  /**
   * 403 CSRF_REJECTED for a request that changes state and does not come from the dashboard's origin:
   * the rule `resolve` applies, for cookie requests outside SessionAuth (logout).
   */
  readonly requireSameOrigin: Effect.Effect<void, Forbidden, HttpServerRequest.HttpServerRequest>
  /** The user's role in the project if it allows `permission`: 404 for a non-member, 403 for too small a role. */
  readonly access: (
    userId: string,
    projectId: string,
    permission: Permission
  ) => Effect.Effect<ProjectAccess, NotFound | Forbidden | PersistenceError>
}>()("app/http/DashboardSessions") {
  static readonly layer = Layer.effect(
    DashboardSessions,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const cookies = yield* SessionCookie
      const users = yield* Users
      const members = yield* Members
      const projects = yield* Projects
      const publicOrigin = new URL(config.publicUrl).origin

      const unauthenticated = (message: string) =>
        new Unauthorized({ code: "UNAUTHENTICATED", message, suggestion: "Sign in with POST /auth/login." })

      /** Browsers send Origin on every cross-site and same-site request that changes state. */
      const sameOrigin = (request: HttpServerRequest.HttpServerRequest) => {
        const origin = request.headers.origin
        if (origin === undefined) return ["same-origin", "none"].includes(request.headers["sec-fetch-site"] ?? "")
        const host = request.headers.host
        return origin === publicOrigin || (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`))
      }

      const requireSameOrigin = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (!SAFE_METHODS.has(request.method) && !sameOrigin(request)) {
          return yield* new Forbidden({
            code: "CSRF_REJECTED",
            message: "A request authenticated by the session cookie that changes state must come from the dashboard's origin",
            suggestion: `Send it from ${publicOrigin} (the Origin header), or use the project's secret key.`
          })
        }
      })

      const resolve = Effect.fnUntraced(function*(cookie: string) {
        if (cookie === "") return yield* unauthenticated("Not signed in")
        const claims = yield* cookies.verify(cookie)
        if (!claims) return yield* unauthenticated("The session is invalid or has expired")
        const user = yield* users.sessionUser(claims.sessionId)
        if (!user || user.id !== claims.userId) return yield* unauthenticated("The session is invalid or has expired")
        yield* requireSameOrigin
        return toSessionUser(user, claims.sessionId)
      })

      const access = Effect.fnUntraced(function*(userId: string, projectId: string, permission: Permission) {
        const notFound = NotFound.of("Project")
        if (!isUuid(projectId)) return yield* notFound
        const role = yield* members.roleOf(projectId, userId)
        if (!role) return yield* notFound
        const project = yield* projects.details(projectId)
        if (!project) return yield* notFound
        if (!allows(role, permission)) {
          return yield* new Forbidden({
            code: "FORBIDDEN",
            message: `Your role in this project (${role}) does not allow this`,
            details: { role, required: permission }
          })
        }
        return { project, role }
      })

      return DashboardSessions.of({ resolve, requireSameOrigin, access })
    })
  )
}

/** The SessionAuth middleware: a valid session cookie or 401. */
export const SessionAuthLive = Layer.effect(
  SessionAuth,
  Effect.gen(function*() {
    const sessions = yield* DashboardSessions
    const rateLimiter = yield* RateLimiter
    return SessionAuth.of({
      session: <E, R>(
        httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
        { credential }: { readonly credential: Redacted.Redacted<string> }
      ) =>
        rendered(Effect.gen(function*() {
          const signedIn = yield* rendered(sessions.resolve(Redacted.value(credential)))
          // RATE_LIMIT_PER_MINUTE applies per dashboard user too (their id is the key).
          yield* enforceRateLimit(yield* rateLimiter.check(signedIn.user.id), "", "user")
          return yield* Effect.provideService(httpEffect, CurrentUser, signedIn)
        }))
    })
  })
)
