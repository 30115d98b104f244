import { describe, expect, it } from "vitest"
import { applyDataPatch, inferFieldType, inferFieldTypes, toDataPatch } from "../../src/domain/customData.ts"

describe("custom data rules", () => {
  it("stores primitives and objects, deletes on null, ignores empty strings and reserved keys", () => {
    const patch = toDataPatch({
      plan: "pro",
      seats: 3,
      beta: false,
      profile: { tier: "gold" },
      old: null,
      blank: "",
      email: "x@y.z",
      id: "nope",
      unsubscribeUrl: "http://evil",
      once: { value: 42, persistent: false }
    })
    expect(patch.set).toEqual({ plan: "pro", seats: 3, beta: false, profile: { tier: "gold" } })
    expect(patch.remove).toEqual(["old"])
    expect(patch.transient).toEqual({ once: 42 })
  })

  it("patches: only the keys sent change", () => {
    const next = applyDataPatch({ a: 1, b: 2, old: "x" }, toDataPatch({ b: 3, old: null, c: "" }))
    expect(next).toEqual({ a: 1, b: 3 })
  })

  it("infers number, boolean, date (YYYY-MM-DD or ISO timestamp), object, else string", () => {
    expect(inferFieldType(1.5)).toBe("number")
    expect(inferFieldType(true)).toBe("boolean")
    expect(inferFieldType("2024-02-29")).toBe("date")
    expect(inferFieldType("2024-02-29T10:11:12.123Z")).toBe("date")
    expect(inferFieldType("2024-13-45")).toBe("string")
    expect(inferFieldType("02/29/2024")).toBe("string")
    expect(inferFieldType({ a: 1 })).toBe("object")
    expect(inferFieldType("hello")).toBe("string")
  })

  it("infers nested leaves as dotted paths", () => {
    expect(inferFieldTypes({ profile: { tier: "gold", since: "2020-01-01" } })).toEqual([
      ["profile", "object"],
      ["profile.tier", "string"],
      ["profile.since", "date"]
    ])
  })
})
