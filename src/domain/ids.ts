import { hash as oneShotHash, randomFillSync } from "node:crypto"
import { isUuid } from "./uuid.ts"

// Random bytes are drawn from a pool refilled 4 KiB at a time: one syscall per 256 ids instead of
// one per id (this showed up at 8% of the api's CPU on the track path).
const POOL_SIZE = 4096
const pool = Buffer.allocUnsafe(POOL_SIZE)
let offset = POOL_SIZE

export const randomBytesFromPool = (size: number): Buffer => {
  if (offset + size > POOL_SIZE) {
    randomFillSync(pool)
    offset = 0
  }
  const out = Buffer.from(pool.subarray(offset, offset + size))
  offset += size
  return out
}

const formatUuid = (bytes: Buffer): string => {
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** UUIDv7 (RFC 9562): time-ordered, so ids sort by creation and index well. */
export const uuidv7 = (now: number = Date.now()): string => {
  const bytes = randomBytesFromPool(16)
  bytes[0] = (now / 2 ** 40) & 0xff
  bytes[1] = (now / 2 ** 32) & 0xff
  bytes[2] = (now >>> 24) & 0xff
  bytes[3] = (now >>> 16) & 0xff
  bytes[4] = (now >>> 8) & 0xff
  bytes[5] = now & 0xff
  bytes[6] = (bytes[6]! & 0x0f) | 0x70
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  return formatUuid(bytes)
}

/** Items one operation can derive ids for (the index fills 12 bits). */
export const MAX_DERIVED_IDS = 4096

/**
 * The id of item `index` of an operation whose id is a UUIDv7: the same operation and index always
 * give the same id (so a repeated operation repeats its ids), ids of one operation sort in index
 * order after its timestamp, and different operations (almost surely) share none: the operation's
 * 48-bit timestamp, the index in the 12 bits after the version, 62 bits hashed from both.
 */
export const derivedUuidv7 = (operationId: string, index: number): string => {
  if (!isUuid(operationId)) throw new TypeError(`not a UUID: ${operationId}`)
  if (!Number.isInteger(index) || index < 0 || index >= MAX_DERIVED_IDS) throw new RangeError(`index ${index} out of range`)
  const bytes = Buffer.from(operationId.replaceAll("-", ""), "hex")
  // One-shot hashing: the same digest as createHash(...).update(...).digest(), without a Hash object per id.
  const hash = oneShotHash("sha256", `${operationId}/${index}`, "buffer")
  bytes[6] = 0x70 | (index >> 8)
  bytes[7] = index & 0xff
  hash.copy(bytes, 8, 0, 8)
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  return formatUuid(bytes)
}

/**
 * The id of item `index` of an operation that is never repeated (no Idempotency-Key): the operation's
 * own UUIDv7 with the index in the 12 bits after the version. Ids of one operation differ by their
 * index and sort in its order; other operations differ in their timestamp or 62 random bits. No hashing:
 * nothing has to derive the same id again.
 */
export const indexedUuidv7 = (operationId: string, index: number): string => {
  if (!isUuid(operationId)) throw new TypeError(`not a UUID: ${operationId}`)
  if (!Number.isInteger(index) || index < 0 || index >= MAX_DERIVED_IDS) throw new RangeError(`index ${index} out of range`)
  // xxxxxxxx-xxxx-7IIi-...: the version digit stays, the index's 3 hex digits follow it.
  return `${operationId.slice(0, 15)}${index.toString(16).padStart(3, "0")}${operationId.slice(18)}`
}

export { isUuid }
