/**
 * Password hashing with argon2id (@node-rs/argon2, its defaults: 19 MiB, 2 passes). A sign-in for an
 * unknown email still verifies against a dummy hash, so both failures take the same time.
 */
import { hash, verify } from "@node-rs/argon2"
import { Effect } from "effect"

export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 256

/** Algorithm.Argon2id (a const enum in the package's types, so spelled out here). */
const ARGON2ID = 2

export const hashPassword = (password: string) => Effect.promise(() => hash(password, { algorithm: ARGON2ID }))

let dummyHash: Promise<string> | undefined

/** true when `password` matches `stored`; with no stored hash, spends the same time and answers false. */
export const verifyPassword = (password: string, stored: string | null | undefined) =>
  Effect.promise(async () => {
    if (stored) return verify(stored, password).catch(() => false)
    dummyHash ??= hash("not a password of anyone", { algorithm: ARGON2ID })
    await verify(await dummyHash, password).catch(() => false)
    return false
  })
