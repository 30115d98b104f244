import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { dataPayloadProblems } from "../../src/domain/customData.ts"
import { isStorableText, MAX_JSON_DEPTH, storableProblem } from "../../src/domain/storable.ts"

const nested = (levels: number): unknown => JSON.parse("[".repeat(levels) + "]".repeat(levels))

describe("what the service can store", () => {
  it("refuses NUL and unpaired surrogates, keeps paired ones", () => {
    expect(isStorableText("plain ✓ 😀")).toBe(true)
    expect(isStorableText("a\u0000b")).toBe(false)
    expect(isStorableText("\ud800")).toBe(false)
    expect(isStorableText("x\udc00")).toBe(false)
    expect(isStorableText("\ud83d\ude00")).toBe(true)
  })

  it("names the path of the first problem: strings, keys, __proto__, non-finite numbers", () => {
    expect(storableProblem({ a: [1, { b: "x\u0000" }] })).toMatchObject({ path: ["a", 1, "b"], code: "invalid_string" })
    expect(storableProblem({ profile: { "k\ud800": 1 } })).toMatchObject({ path: ["profile", "k\ud800"], code: "invalid_key" })
    expect(storableProblem(JSON.parse('{"profile":{"__proto__":{"x":1}}}'))).toMatchObject({
      path: ["profile", "__proto__"],
      code: "forbidden_key"
    })
    expect(storableProblem({ n: JSON.parse("1e400") })).toMatchObject({ path: ["n"], code: "invalid_number" })
    expect(storableProblem({ constructor: { prototype: 1 }, ok: [true, null, 1.5, "ü"] })).toBeUndefined()
  })

  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses ${MAX_JSON_DEPTH + 1}`, () => {
    expect(storableProblem(nested(MAX_JSON_DEPTH))).toBeUndefined()
    expect(storableProblem(nested(MAX_JSON_DEPTH + 1))).toMatchObject({ code: "too_deep" })
  })

  it("checks values nested far deeper than the call stack allows, without recursion", () => {
    const deep = nested(200_000)
    expect(() => JSON.stringify(deep)).toThrow(RangeError)
    expect(storableProblem(deep)).toMatchObject({ code: "too_deep" })
    expect(storableProblem(deep, Number.POSITIVE_INFINITY)).toBeUndefined()
  })

  it("custom data reports what Postgres would refuse, at any depth, instead of overflowing the stack", () => {
    expect(dataPayloadProblems({ profile: nested(5_000) } as Record<string, unknown>)).toEqual([
      ["data", expect.stringContaining("at most 32 levels")]
    ])
    expect(dataPayloadProblems({ a: { b: "\ud800" } })).toEqual([["data", expect.stringContaining("data.a.b")]])
  })

  it("accepts exactly what JSON.stringify writes without the escapes Postgres refuses (\\u0000, a lone \\udXXX)", () => {
    const unit = fc.constantFrom("a", "é", "\u0000", "\ud800", "\udc00", "\ud83d\ude00")
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6, stringUnit: unit }), (value) => {
      const refusedByPostgres = /\\u0000|\\ud[89a-f][0-9a-f]{2}/i.test(JSON.stringify(value))
      expect(storableProblem(value) !== undefined).toBe(refusedByPostgres)
    }))
  })
})
