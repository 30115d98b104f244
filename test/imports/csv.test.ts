import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { columnName, escapeFormula, unescapeFormula } from "../../src/domain/imports/cells.ts"
import { cellValue, detectDelimiter, subscriptionValue, valueCell } from "../../src/imports/csv.ts"
import { dataColumnHeader, headerDataKey, planColumns, readRow } from "../../src/domain/imports/plan.ts"

describe("CSV cells", () => {
  it("detects the delimiter from the header, outside quotes", () => {
    expect(detectDelimiter("\uFEFFemail;name;plan\r\na,b,c")).toBe(";")
    expect(detectDelimiter("email\tname\n")).toBe("\t")
    expect(detectDelimiter('"a;b;c",email\n')).toBe(",")
    expect(detectDelimiter("email\n")).toBe(",")
  })

  it("infers types like POST /contacts does for JSON values, and undoes formula escapes", () => {
    expect(cellValue("42")).toBe(42)
    expect(cellValue("-1.5")).toBe(-1.5)
    expect(cellValue("007")).toBe("007")
    expect(cellValue("12345678901234567890")).toBe("12345678901234567890")
    expect(cellValue("TRUE")).toBe(true)
    expect(cellValue('{"a":1}')).toEqual({ a: 1 })
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
    expect(planned.plan).toMatchObject({ email: 0, subscribed: null, data: [[2, "plan"]] })
    expect(planned.reserved).toEqual(["id"])
    expect(readRow(planned.plan, [" Ada@Example.COM ", "x", "pro", "2024-01-01T00:00:00Z", "j"]))
      .toEqual({ _tag: "row", email: "ada@example.com", subscribed: null, set: { plan: "pro" } })
    expect(planColumns(["name"], ",", {}, null)).toEqual({ message: expect.stringContaining("no email column") })
    expect(planColumns(["email", "a", "b"], ",", { a: "x", b: "x" }, null)).toEqual({ message: expect.stringContaining('"x"') })
    expect(planColumns(["email"], ",", { nope: "x" }, null)).toEqual({ message: expect.stringContaining("nope") })
  })

  it("names a plain header's key in lower case, its words one space apart (spec: custom fields, rule 6)", () => {
    const planned = planColumns(["email", "First Name", " Last \t  Name ", '"Company Name"', "Tier", "ID", "unsubscribeUrl"], ",", {
      Tier: "Tier"
    }, null)
    if ("message" in planned) throw new Error(planned.message)
    // A JSON string literal header and a mapped key are taken exactly; `ID` is the reserved key `id`.
    expect(planned.plan.data).toEqual([[1, "first name"], [2, "last name"], [3, "Company Name"], [4, "Tier"]])
    expect(planned.reserved).toEqual(["ID", "unsubscribeUrl"])
    expect(readRow(planned.plan, ["ada@example.com", "Ada", "Lovelace", "Analytical", "gold", "7", "x"]))
      .toMatchObject({ set: { "first name": "Ada", "last name": "Lovelace", "Company Name": "Analytical", Tier: "gold" } })
    expect(headerDataKey("First Name")).toBe("first name")
    // Two headers naming one key are refused, as two columns of one name are.
    expect(planColumns(["email", "First Name", "first name"], ",", {}, null)).toEqual({ message: expect.stringContaining('"first name"') })
    // An export names a key a plain header would lower-case by a literal, so it reads back as that key.
    expect(dataColumnHeader("first name")).toBe("first name")
    expect(dataColumnHeader("First Name")).toBe('"First Name"')
    expect(dataColumnHeader("a  b")).toBe('"a  b"')
  })

  it("escapes formulas so that every text reads back as itself, apostrophes in front included", () => {
    expect(escapeFormula("=2+5@example.com")).toBe("'=2+5@example.com")
    expect(escapeFormula("'=2+5@example.com")).toBe("''=2+5@example.com")
    expect(escapeFormula("'abc")).toBe("'abc")
    expect(escapeFormula("plain")).toBe("plain")
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("'", "=", "+", "-", "@", "\t", "\r", "a", " ") }), (text) => {
        expect(unescapeFormula(escapeFormula(text))).toBe(text)
        expect(escapeFormula(text)).not.toMatch(/^[=+\-@\t\r]/)
      }),
      { numRuns: 2_000 }
    )
  })

  it("writes each data value so that it reads back as that value, with its type", () => {
    expect(valueCell("-5")).toBe('"-5"')
    expect(valueCell(-5)).toBe("'-5")
    expect(valueCell("true")).toBe('"true"')
    expect(valueCell("007")).toBe("007")
    expect(valueCell(2 ** 53 + 2)).toBe("9.007199254740994e+15")
    expect(cellValue('"=1"')).toBe("=1")
    // Stored data is JSON (jsonb): the same value is the same JSON text (-0 is 0 there).
    const value = fc.jsonValue({ maxDepth: 2 }).filter((json) => json !== null && json !== "")
    fc.assert(
      fc.property(
        fc.oneof(value, fc.string({ unit: fc.constantFrom("'", '"', "=", "-", "1", "e", "t", "{", "}", " "), minLength: 1 })),
        (json) => {
          expect(JSON.stringify(cellValue(valueCell(json)))).toBe(JSON.stringify(json))
        }
      ),
      { numRuns: 2_000 }
    )
  })

  it("names each data key's column so that the plan reads it as that key, not as a standard column", () => {
    expect(dataColumnHeader("plan")).toBe("plan")
    expect(dataColumnHeader("subscribed")).toBe('"subscribed"')
    expect(dataColumnHeader(" padded ")).toBe('" padded "')
    expect(dataColumnHeader("-score")).toBe("'-score")
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom("email", "Email", "E-Mail Address", "subscribed", "createdAt", "updatedAt", '"q"', "'=x", "ignore"),
          fc.string({ minLength: 1, maxLength: 10 })
        ),
        (key) => {
          expect(columnName(dataColumnHeader(key))).toMatchObject({ name: key })
          const planned = planColumns(["email", dataColumnHeader(key)], ",", {}, null)
          if ("message" in planned) throw new Error(planned.message)
          if (["id", "plunk_id", "plunk_email", "email", "unsubscribeUrl", "subscribeUrl", "manageUrl"].includes(key))
            expect(
              planned.reserved
            ).toEqual([key])
          else expect(planned.plan.data).toEqual([[1, key]])
        }
      ),
      { numRuns: 2_000 }
    )
  })
})
