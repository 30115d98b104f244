/**
 * The sender's cache of DKIM signing keys, by project and sender domain: read once for a round's rows
 * (they all miss together when the key expires), parsed once (signing with a KeyObject takes half the
 * time of signing with the PEM text), and read again after a few seconds, since a domain may lose its
 * verification.
 */
import { Clock, Effect } from "effect"
import { createPrivateKey } from "node:crypto"
import type { Domains } from "../store/Domains.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"
import type { ParsedSigningKey } from "./composeMessage.ts"

/** How long signing keys are reused before being read again (a domain may lose its verification). */
const SIGNING_KEY_TTL_MS = 5_000

export const makeSigningKeys = (domains: Domains["Service"]) => {
  const keys = new Map<string, { lookup: Effect.Effect<ParsedSigningKey | undefined, PersistenceError>; expires: number }>()

  const signingKeyOf = Effect.fnUntraced(function*(projectId: string, fromEmail: string) {
    const domain = fromEmail.slice(fromEmail.lastIndexOf("@") + 1)
    const cacheKey = `${projectId} ${domain}`
    const hit = keys.get(cacheKey)
    const now = yield* Clock.currentTimeMillis
    if (hit && hit.expires > now) return yield* hit.lookup
    // One lookup for a round's rows at once (they all miss together when the key expires), read and
    // parsed once: signing with a KeyObject takes half the time of signing with the PEM text.
    const lookup: Effect.Effect<ParsedSigningKey | undefined, PersistenceError> = yield* Effect.cached(
      domains.signingKey(projectId, domain).pipe(
        Effect.map((stored) => stored && { ...stored, privateKey: createPrivateKey(stored.privateKey) }),
        // A failed lookup is not kept: the next row asks again.
        Effect.onError(() => Effect.sync(() => keys.get(cacheKey)?.lookup === lookup && keys.delete(cacheKey)))
      )
    )
    keys.set(cacheKey, { lookup, expires: now + SIGNING_KEY_TTL_MS })
    return yield* lookup
  })

  return signingKeyOf
}
