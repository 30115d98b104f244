/**
 * Known devices (OWASP's "device cookies"): a password sign-in leaves a signed, long-lived cookie naming
 * the account and a random device id, sent back only to `/auth/login`. A sign-in from a browser holding
 * one for that account is throttled by that device's own failures (store/LoginThrottle.ts), so whoever
 * hammers an email from elsewhere slows themselves, not the account's owner on the browsers they use.
 * The cookie cannot be forged (HS256 with the session key) and proves only a past sign-in: the password
 * is still checked.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import type { SessionCookie } from "./SessionCookie.ts"

export const DEVICE_COOKIE = "mailstream_device"
const DEVICE_TTL_SECONDS = 365 * 24 * 3600

/** The device id of `token` when it was issued to `userId`, else undefined. */
export const recognizedDevice = (cookies: SessionCookie["Service"], token: string | undefined, userId: string | undefined) =>
  token === undefined || userId === undefined
    ? Effect.succeed(undefined)
    : Effect.map(cookies.verifyDevice(token), (claims) => (claims?.userId === userId ? claims.deviceId : undefined))

/** `response` with the device cookie for `userId` set (the same device id when it had one), for another year. */
export const rememberDevice = Effect.fnUntraced(function*(
  cookies: SessionCookie["Service"],
  userId: string,
  deviceId: string | undefined,
  response: HttpServerResponse.HttpServerResponse
) {
  const expiresAt = new Date(Date.now() + DEVICE_TTL_SECONDS * 1000)
  const token = yield* cookies.signDevice({ userId, deviceId: deviceId ?? randomBytes(16).toString("base64url") }, expiresAt)
  return HttpServerResponse.setCookieUnsafe(response, DEVICE_COOKIE, token, {
    ...cookies.options(DEVICE_TTL_SECONDS),
    path: "/auth/login",
    sameSite: "strict"
  })
})
