import { describe, expect, it } from "vitest"
import { derivedUuidv7, indexedUuidv7, isUuid, MAX_DERIVED_IDS, uuidv7 } from "../../src/domain/ids.ts"

describe("derivedUuidv7", () => {
  const operation = uuidv7(Date.UTC(2024, 5, 1))

  it("gives the same id for the same operation and index, a different one for another index or operation", () => {
    expect(derivedUuidv7(operation, 7)).toBe(derivedUuidv7(operation, 7))
    const ids = Array.from({ length: 500 }, (_, index) => derivedUuidv7(operation, index))
    expect(new Set(ids).size).toBe(500)
    const other = uuidv7(Date.UTC(2024, 5, 1))
    expect(ids.filter((id, index) => id === derivedUuidv7(other, index))).toEqual([])
  })

  it("derives the ids it always derived (a retry across an upgrade repeats its events' ids)", () => {
    const fixed = "019375a2-4c00-7abc-8def-0123456789ab"
    expect(derivedUuidv7(fixed, 0)).toBe("019375a2-4c00-7000-af34-0af318b0e176")
    expect(derivedUuidv7(fixed, 4095)).toBe("019375a2-4c00-7fff-a10d-6a8b97b3b1fa")
  })

  it("is a UUIDv7 with the operation's timestamp, sorting in index order", () => {
    const ids = Array.from({ length: MAX_DERIVED_IDS }, (_, index) => derivedUuidv7(operation, index))
    for (const id of ids) {
      expect(isUuid(id)).toBe(true)
      expect(id[14]).toBe("7")
      expect("89ab").toContain(id[19])
      expect(id.slice(0, 13)).toBe(operation.slice(0, 13))
    }
    expect([...ids].sort()).toEqual(ids)
  })

  it("refuses an index it cannot encode and an operation id that is not a UUID", () => {
    expect(() => derivedUuidv7(operation, MAX_DERIVED_IDS)).toThrow(RangeError)
    expect(() => derivedUuidv7(operation, -1)).toThrow(RangeError)
    expect(() => derivedUuidv7("not-a-uuid", 0)).toThrow(TypeError)
  })
})

describe("indexedUuidv7", () => {
  it("gives each index of an operation its own UUIDv7, sorting in index order after the operation's timestamp", () => {
    const operation = uuidv7(Date.UTC(2024, 5, 1))
    const ids = Array.from({ length: MAX_DERIVED_IDS }, (_, index) => indexedUuidv7(operation, index))
    expect(new Set(ids).size).toBe(MAX_DERIVED_IDS)
    expect([...ids].sort()).toEqual(ids)
    for (const id of ids) {
      expect(isUuid(id)).toBe(true)
      expect(id[14]).toBe("7")
      expect(id.slice(0, 13)).toBe(operation.slice(0, 13))
      expect(id.slice(19)).toBe(operation.slice(19))
    }
    // Another operation in the same millisecond shares none of them.
    const other = uuidv7(Date.UTC(2024, 5, 1))
    expect(ids.filter((id, index) => id === indexedUuidv7(other, index))).toEqual([])
    expect(() => indexedUuidv7(operation, MAX_DERIVED_IDS)).toThrow(RangeError)
    expect(() => indexedUuidv7("not-a-uuid", 0)).toThrow(TypeError)
  })
})
