/** Authentication middleware tags (contract side). Implementations live in ../auth.ts and ../session.ts. */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Project } from "../../domain/project.ts"
import type { SessionUser } from "../../domain/user.ts"
import { ErrorDocs } from "./errors.ts"

/**
 * What the key check can refuse with, whatever the endpoint: a missing, unknown or wrong kind of key
 * (401), a disabled project (403), the rate limit (429), Postgres unreachable while resolving the key (503).
 */
const keyErrors = [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ErrorDocs.unavailable] as const

/**
 * What the session check adds: the cookie's user is not a member of the X-Project-Id project (404), or
 * X-Project-Id is missing (400 PROJECT_ID_REQUIRED); a role too small or a cross-origin change is a 403.
 */
const sessionErrors = [...keyErrors, ErrorDocs.notFound, ErrorDocs.badRequest] as const

/** The project the request's API key (or session cookie plus X-Project-Id) belongs to. */
export class CurrentProject extends Context.Service<CurrentProject, Project>()("app/http/CurrentProject") {}

/** The signed-in dashboard user (session cookie). */
export class CurrentUser extends Context.Service<CurrentUser, SessionUser>()("app/http/CurrentUser") {}

/** The dashboard's session cookie, set by POST /auth/login (and signup, OAuth) and cleared by POST /auth/logout. */
export const sessionCookie = HttpApiSecurity.apiKey({ in: "cookie", key: "mailstream_session" }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "Dashboard session (a signed JWT in an HttpOnly, SameSite=Lax cookie). On project resources send `X-Project-Id` " +
      "with it; requests that change state must come from the dashboard's own origin (`Origin` header)."
  )
)

/**
 * `sk_` keys: every endpoint except /v1/track. The dashboard reaches the same endpoints with its
 * session cookie plus `X-Project-Id`, checked against the user's membership and role.
 */
export class SecretKeyAuth extends HttpApiMiddleware.Service<SecretKeyAuth, { provides: CurrentProject }>()(
  "app/http/SecretKeyAuth",
  { security: { secretKey: HttpApiSecurity.bearer, session: sessionCookie }, error: sessionErrors }
) {}

/** `pk_` keys: /v1/track (and its /events/track alias) only. */
export class PublicKeyAuth extends HttpApiMiddleware.Service<PublicKeyAuth, { provides: CurrentProject }>()(
  "app/http/PublicKeyAuth",
  { security: { publicKey: HttpApiSecurity.bearer }, error: keyErrors }
) {}

/** Dashboard endpoints (/users/@me..., /projects/:id/...): the session cookie only. */
export class SessionAuth extends HttpApiMiddleware.Service<SessionAuth, { provides: CurrentUser }>()(
  "app/http/SessionAuth",
  {
    security: { session: sessionCookie },
    error: [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ErrorDocs.unavailable]
  }
) {}
