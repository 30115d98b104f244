import { describe, expect, it } from "vitest"
import { cellValue, detectDelimiter, subscriptionValue, valueCell } from "../../src/imports/csv.ts"
import { planColumns, readRow } from "../../src/domain/imports/plan.ts"

describe("CSV cells", () => {
  it("detects the delimiter from the header, outside quotes", () => {
    expect(detectDelimiter("\uFEFFemail;name;plan\r\na,b,c")).toBe(";")
    expect(detectDelimiter("email\tname\n")).toBe("\t")
    expect(detectDelimiter("\"a;b;c\",email\n")).toBe(",")
    expect(detectDelimiter("email\n")).toBe(",")
  })

  it("infers types like POST /contacts does for JSON values, and undoes formula escapes", () => {
    expect(cellValue("42")).toBe(42)
    expect(cellValue("-1.5")).toBe(-1.5)
    expect(cellValue("007")).toBe("007")
    expect(cellValue("12345678901234567890")).toBe("12345678901234567890")
    expect(cellValue("TRUE")).toBe(true)
    expect(cellValue("{\"a\":1}")).toEqual({ a: 1 })
    expect(cellValue("{not json}")).toBe("{not json}")
    expect(cellValue("2024-05-01")).toBe("2024-05-01")
    expect(cellValue("'=SUM(A1)")).toBe("=SUM(A1)")
    expect(cellValue("'-5")).toBe(-5)
    for (const value of [42, -1.5, true, "text", { a: [1, 2] }, "2024-05-01"]) expect(cellValue(valueCell(value))).toEqual(value)
    expect(subscriptionValue(" Yes ")).toBe(true)
    expect(subscriptionValue("0")).toBe(false)
    expect(subscriptionValue("maybe")).toBeUndefined()
  })

  it("plans columns: email aliases, mapping, reserved keys, refusals", () => {
    const planned = planColumns(["Email Address", "id", "Plan", "createdAt", "Junk"], ",", { Junk: "ignore" }, null)
    if ("message" in planned) throw new Error(planned.message)
    expect(planned.plan).toMatchObject({ email: 0, subscribed: null, data: [[2, "Plan"]] })
    expect(planned.reserved).toEqual(["id"])
    expect(readRow(planned.plan, [" Ada@Example.COM ", "x", "pro", "2024-01-01T00:00:00Z", "j"]))
      .toEqual({ _tag: "row", email: "ada@example.com", subscribed: null, set: { Plan: "pro" } })
    expect(planColumns(["name"], ",", {}, null)).toEqual({ message: expect.stringContaining("no email column") })
    expect(planColumns(["email", "a", "b"], ",", { a: "x", b: "x" }, null)).toEqual({ message: expect.stringContaining("\"x\"") })
    expect(planColumns(["email"], ",", { nope: "x" }, null)).toEqual({ message: expect.stringContaining("nope") })
  })
})
