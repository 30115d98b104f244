/** Authentication middleware tags (contract side). Implementations live in ../auth.ts. */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { Project } from "../../domain/project.ts"

/** The project the request's API key belongs to. */
export class CurrentProject extends Context.Service<CurrentProject, Project>()("app/http/CurrentProject") {}

/** `sk_` keys: every endpoint except /v1/track. */
export class SecretKeyAuth extends HttpApiMiddleware.Service<SecretKeyAuth, { provides: CurrentProject }>()(
  "app/http/SecretKeyAuth",
  { security: { secretKey: HttpApiSecurity.bearer } }
) {}

/** `pk_` keys: /v1/track (and its /events/track alias) only. */
export class PublicKeyAuth extends HttpApiMiddleware.Service<PublicKeyAuth, { provides: CurrentProject }>()(
  "app/http/PublicKeyAuth",
  { security: { publicKey: HttpApiSecurity.bearer } }
) {}
