/**
 * The dashboard session cookie: a JWT (HS256, `jose`) naming the user and the server-side session row,
 * in an `HttpOnly; SameSite=Lax` cookie (`Secure` when PUBLIC_URL is https). The signing key is
 * SESSION_SECRET, or one the installation generates once and keeps in Postgres, so every api process
 * signs and verifies with the same key.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { jwtVerify, SignJWT } from "jose"
import { randomBytes } from "node:crypto"
import { AppConfig } from "../config.ts"

export const SESSION_COOKIE = "mailstream_session"

export interface SessionClaims {
  readonly userId: string
  readonly sessionId: string
}

/** A known-device token: the browser signed in to this user's account before (accounts/knownDevice.ts). */
export interface DeviceClaims {
  readonly userId: string
  readonly deviceId: string
}

/** Device tokens carry this audience and no session id: neither kind is ever taken for the other. */
const DEVICE_AUDIENCE = "mailstream:device"

export interface CookieOptions {
  readonly httpOnly: true
  readonly sameSite: "lax"
  readonly secure: boolean
  readonly path: "/"
  readonly maxAge?: `${number} seconds`
}

export class SessionCookie extends Context.Service<SessionCookie, {
  readonly sign: (claims: SessionClaims, expiresAt: Date) => Effect.Effect<string>
  /** The claims of a valid, unexpired token; undefined for anything else. */
  readonly verify: (token: string) => Effect.Effect<SessionClaims | undefined>
  readonly signDevice: (claims: DeviceClaims, expiresAt: Date) => Effect.Effect<string>
  /** The claims of a valid, unexpired device token; undefined for anything else. */
  readonly verifyDevice: (token: string) => Effect.Effect<DeviceClaims | undefined>
  /** Attributes of the cookie (Max-Age from the session's lifetime). */
  readonly options: (maxAgeSeconds?: number) => CookieOptions
}>()("app/accounts/SessionCookie") {
  static readonly layer = Layer.effect(
    SessionCookie,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const secretText = (config.sessionSecret && Redacted.value(config.sessionSecret)) ?? (yield* Effect.gen(function*() {
        yield* sql`INSERT INTO platform_secrets (name, value) VALUES ('session_secret', ${randomBytes(48).toString("base64url")})
                   ON CONFLICT (name) DO NOTHING`
        const [row] = yield* sql<{ value: string }>`SELECT value FROM platform_secrets WHERE name = 'session_secret'`
        return row!.value
        // Kept a defect: at start-up, without its signing key the api cannot serve; the layer's failure stops it.
      }).pipe(Effect.orDie))
      const key = new TextEncoder().encode(secretText)
      const secure = config.publicUrl.startsWith("https:")

      return SessionCookie.of({
        sign: (claims, expiresAt) =>
          Effect.promise(() =>
            new SignJWT({ sid: claims.sessionId })
              .setProtectedHeader({ alg: "HS256" })
              .setSubject(claims.userId)
              .setIssuedAt()
              .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
              .sign(key)
          ),
        verify: (token) =>
          Effect.promise(() =>
            jwtVerify(token, key, { algorithms: ["HS256"] }).then(
              ({ payload }) =>
                typeof payload.sub === "string" && typeof payload.sid === "string"
                  ? { userId: payload.sub, sessionId: payload.sid }
                  : undefined,
              () => undefined
            )
          ),
        signDevice: (claims, expiresAt) =>
          Effect.promise(() =>
            new SignJWT({ did: claims.deviceId })
              .setProtectedHeader({ alg: "HS256" })
              .setSubject(claims.userId)
              .setAudience(DEVICE_AUDIENCE)
              .setIssuedAt()
              .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
              .sign(key)
          ),
        verifyDevice: (token) =>
          Effect.promise(() =>
            jwtVerify(token, key, { algorithms: ["HS256"], audience: DEVICE_AUDIENCE }).then(
              ({ payload }) =>
                typeof payload.sub === "string" && typeof payload.did === "string" && payload.sid === undefined
                  ? { userId: payload.sub, deviceId: payload.did }
                  : undefined,
              () => undefined
            )
          ),
        options: (maxAgeSeconds) => ({
          httpOnly: true,
          sameSite: "lax",
          secure,
          path: "/",
          ...(maxAgeSeconds === undefined ? {} : { maxAge: `${maxAgeSeconds} seconds` as const })
        })
      })
    })
  )
}
