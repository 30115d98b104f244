/** The checks that need no network: syntax, IDN, lists, typos, plus-addressing; total over all strings. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { checkAddress, isPlusAddressed } from "../../src/verify/address.ts"
import { ALIAS_DOMAINS, isDisposableDomain, isPersonalDomain } from "../../src/verify/lists.ts"

const valid = (input: string) => {
  const result = checkAddress(input)
  if (!result.syntaxValid) throw new Error(`${input}: ${result.reason}`)
  return result
}

describe("syntax", () => {
  it.each([
    ["", "empty"],
    ["   ", "empty"],
    ["plainaddress", "no @"],
    ["@example.com", "nothing before the @"],
    ["user@", "no domain"],
    ["user@localhost", "top-level domain"],
    ["user@intranet", "top-level domain"],
    ["user@1.2.3.4", "top-level domain"],
    ["user@[192.0.2.1]", "not a valid domain name"],
    ["user@exa mple.com", "not a valid domain name"],
    ["user@-acme.com", "top-level domain"],
    ["a..b@acme.com", "cannot have"],
    [".ab@acme.com", "cannot have"],
    ["a b@acme.com", "cannot have"],
    ["Ada <ada@acme.com>", "not a valid domain name"],
    [`${"a".repeat(65)}@acme.com`, "longer than 64"],
    [`a@${["b", "c", "d", "e", "f"].map((c) => c.repeat(60)).join(".")}.com`, "longer than 254"],
    ["x".repeat(5000), "longer than 254"],
    ["\ud800@acme.com", "unpaired"]
  ])("%j is invalid (%s)", (input, why) => {
    const result = checkAddress(input)
    expect(result.syntaxValid).toBe(false)
    if (!result.syntaxValid) expect(result.reason).toContain(why)
  })

  it.each([
    ["ada@acme.com", "ada@acme.com"],
    ["  Ada.Lovelace@ACME.com ", "ada.lovelace@acme.com"],
    ["o'brien+news@mail.acme.co.uk", "o'brien+news@mail.acme.co.uk"],
    ["ünïcødé@acme.de", "ünïcødé@acme.de"],
    ["a@b.io", "a@b.io"]
  ])("%j is valid, checked as %j", (input, email) => {
    expect(valid(input).email).toBe(email)
  })

  it("normalises IDN domains to ASCII with domainToASCII", () => {
    expect(valid("Ada@Bücher.DE")).toMatchObject({ email: "ada@xn--bcher-kva.de", domain: "xn--bcher-kva.de" })
    expect(valid("user@пример.рф").domain).toBe("xn--e1afmkfd.xn--p1ai")
    expect(valid("user@xn--e1afmkfd.xn--p1ai").domain).toBe("xn--e1afmkfd.xn--p1ai")
    // UTS #46 mapping: full-width letters and dots.
    expect(valid("a@ＧＭＡＩＬ．com").email).toBe("a@gmail.com")
  })
})

describe("lists", () => {
  it("flags disposable domains (and their subdomains), which are never personal", () => {
    expect(valid("a@mailinator.com")).toMatchObject({ isDisposable: true, isPersonalEmail: false })
    expect(valid("a@yopmail.com").isDisposable).toBe(true)
    expect(valid("a@x.mailinator.com").isDisposable).toBe(true)
    expect(valid("a@mailinator.com").reasons).toEqual(["mailinator.com is a disposable (throw-away) email domain."])
    // mailinator.com is on the providers list too; the disposable list wins.
    expect(isDisposableDomain("mailinator.com") && !isPersonalDomain("mailinator.com")).toBe(true)
  })

  it("flags personal providers", () => {
    for (const domain of ["gmail.com", "outlook.com", "yahoo.com", "gmx.de", "proton.me"]) {
      expect(valid(`a@${domain}`), domain).toMatchObject({ isPersonalEmail: true, isDisposable: false, reasons: [] })
    }
    expect(valid("a@acme-widgets.com").isPersonalEmail).toBe(false)
  })

  it("flags alias / relay services and their per-user subdomains", () => {
    for (const domain of ALIAS_DOMAINS) {
      const result = valid(`abc123@${domain}`)
      expect(result.isAlias, domain).toBe(true)
      expect(result.isDisposable, domain).toBe(false)
      expect(result.suggestedEmail, domain).toBeUndefined()
    }
    expect(valid("abc@jane.mozmail.com").isAlias).toBe(true)
    expect(valid("abc@jane.anonaddy.com").isAlias).toBe(true)
    expect(valid("a@duck.com").reasons[0]).toContain("alias / relay service")
    expect(valid("a@gmail.com").isAlias).toBe(false)
  })
})

describe("typos", () => {
  it.each([
    ["user@gmial.com", "user@gmail.com"],
    ["user@gnail.com", "user@gmail.com"],
    ["user@gmail.con", "user@gmail.com"],
    ["User+Tag@Hotmial.com", "user+tag@hotmail.com"],
    ["user@yahooo.com", "user@yahoo.com"],
    ["user@iclod.com", "user@icloud.com"],
    ["user@outlok.com", "user@outlook.com"],
    ["user@protonmial.com", "user@protonmail.com"]
  ])("%s → %s", (input, suggested) => {
    const result = valid(input)
    expect(result.suggestedEmail).toBe(suggested)
    expect(result.reasons).toContain(`The domain looks like a typo: did you mean ${suggested}?`)
  })

  it("keeps a typo domain's own flags (gmial.com is also on the disposable list)", () => {
    expect(valid("user@gmial.com")).toMatchObject({ isDisposable: true, suggestedEmail: "user@gmail.com" })
  })

  it.each([
    "user@gmail.com",
    "user@mail.ru",
    "user@acmewidgets.pt",
    "user@acmewidgets.lu",
    "user@acmewidgets.test",
    "user@gmail.test",
    "user@x.de",
    "user@duck.com",
    "user@company.cmo",
    // On the providers list as real domains (the list's call, not ours).
    "user@gmai.com",
    "user@hotmail.de"
  ])("suggests nothing for %s", (input) => {
    expect(valid(input).suggestedEmail).toBeUndefined()
  })
})

describe("plus-addressing", () => {
  it.each([
    ["user+news@acme.com", true],
    ["first.last+a+b@acme.com", true],
    ["user@acme.com", false],
    ["+news@acme.com", false],
    ["user+@acme.com", false]
  ])("%s → %s", (input, expected) => {
    expect(valid(input).isPlusAddressed).toBe(expected)
  })

  it("looks at the local part only", () => {
    expect(isPlusAddressed("a+b")).toBe(true)
    expect(isPlusAddressed("ab")).toBe(false)
  })
})

describe("property: any string", () => {
  const strings = fc.oneof(
    fc.string({ unit: "binary", maxLength: 80 }),
    fc.string({ unit: "grapheme", maxLength: 80 }),
    fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 80 }),
    fc.tuple(fc.string({ maxLength: 30 }), fc.constantFrom("@", "@@", "+", "."), fc.domain()).map((parts) => parts.join("")),
    fc.emailAddress(),
    fc.emailAddress().map((email) => email.toUpperCase()),
    fc.tuple(fc.emailAddress(), fc.string({ unit: "binary", maxLength: 3 })).map(([email, junk]) => email + junk)
  )

  it("never throws; answers a reason when invalid, a normalised ASCII-domain address when valid", () => {
    fc.assert(
      fc.property(strings, (input) => {
        const result = checkAddress(input)
        if (!result.syntaxValid) {
          expect(result.reason.length).toBeGreaterThan(0)
          return
        }
        expect(result.email.length).toBeLessThanOrEqual(254)
        expect(result.email).toBe(`${result.local}@${result.domain}`)
        expect(result.domain).toMatch(/^[a-z0-9.-]+$/)
        // Checking the normalised form again changes nothing.
        expect(checkAddress(result.email)).toEqual(result)
      }),
      { numRuns: 3000 }
    )
  })
})
