import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { domainStatus, recordsFor, recordStatus } from "../../src/store/domainRecords.ts"
import { addTracking, clickSignature, contactLinks, contactSignatureValid, parseContactToken } from "../../src/mail/links.ts"
import { DEFAULT_LIMITS, makeRenderer, OutputLimitError, TemplateError, templateVariables, toLiquid } from "../../src/mail/render.ts"
import { TokenBucket } from "../../src/mail/throttle.ts"

const renderer = makeRenderer()
const variables = templateVariables({
  contact: { id: "c1", email: "ann@example.org", data: { "first name": "Ann", profile: { tier: "gold" }, nothing: null, empty: "" } },
  sendData: { code: "X-1", html: "<b>bold</b>" },
  links: { unsubscribeUrl: "https://u", subscribeUrl: "https://s", manageUrl: "https://m" }
})
const html = (source: string) => renderer.render(source, "html", variables)
const text = (source: string) => renderer.render(source, "text", variables)

describe("rendering", () => {
  it("reads contact data, send data, nested keys and keys with spaces", async () => {
    expect(await html('{{ first name }} {{ data["first name"] }} {{ profile.tier }} {{ code }} {{ email }} {{ id }}'))
      .toBe("Ann Ann gold X-1 ann@example.org c1")
    expect(await html("{{ unsubscribeUrl }} {{ manageUrl }}")).toBe("https://u https://m")
  })

  it("falls back with ?? only for missing or null values", async () => {
    expect(await text("{{ missing ?? \"friend\" }}|{{ nothing ?? 'n' }}|{{ empty ?? 'e' }}|{{ first name ?? 'x' }}"))
      .toBe("friend|n||Ann")
    expect(await text('{{ missing ?? "a | b" | upcase }}')).toBe("A | B")
    expect(toLiquid('{{ a ?? "x" }}')).toBe('{{ a  | __fallback: "x" }}')
  })

  it("reads an unquoted fallback as literal words, as the reference platform does (never a variable)", async () => {
    expect(await text("{{ missing ?? there }}|{{ missing ?? Dear customer }}|{{ missing ?? code }}|{{ code ?? other }}"))
      .toBe("there|Dear customer|code|X-1")
    // Of several fallbacks the first applies; filters apply to the value with its fallback.
    expect(await text('{{ missing ?? first ?? second }}|{{ missing ?? shout | upcase }}|{{ missing ?? it\'s }}|{{ missing ?? "a ?? b" }}'))
      .toBe("first|SHOUT|it's|a ?? b")
  })

  it("reads the contact's locale as given, this send's first, and English without one", async () => {
    expect(await text("{{ locale }}")).toBe("en")
    const links = { unsubscribeUrl: "https://u", subscribeUrl: "https://s", manageUrl: "https://m" }
    const contact = { id: "c2", email: "eva@example.at", data: { locale: "de-AT" } }
    expect(await renderer.render("{{ locale }} {{ data.locale }}", "text", templateVariables({ contact, links }))).toBe("de-AT de-AT")
    expect(await renderer.render("{{ locale }}", "text", templateVariables({ contact, links, sendData: { locale: "fr" } }))).toBe("fr")
  })

  it("names the reference's plunk_id and plunk_email, and the line of a syntax error", async () => {
    expect(await text("{{ plunk_id }} {{ plunk_email }}")).toBe("c1 ann@example.org")
    expect(() => renderer.compile("<p>ok</p>\n\n{% if x %}open", "html")).toThrow(/not closed \(line 3\)/)
  })

  it("supports Liquid conditionals, loops and filters", async () => {
    expect(
      await text("{% if profile.tier == 'gold' %}VIP{% else %}-{% endif %} {% for i in (1..3) %}{{ i }}{% endfor %} {{ 'abc' | upcase }}")
    )
      .toBe("VIP 123 ABC")
  })

  it("escapes output in HTML bodies, not in subjects", async () => {
    expect(await html("{{ html }}")).toBe("&lt;b&gt;bold&lt;/b&gt;")
    expect(await text("{{ html }}")).toBe("<b>bold</b>")
  })

  it("reads no prototype properties and no files", async () => {
    expect(await html("[{{ email.constructor }}][{{ profile.__proto__ }}]")).toBe("[][]")
    // Refused when parsed (so when a template is saved), not when mail is sent.
    expect(() => renderer.compile("{% include 'secrets' %}", "html")).toThrow(TemplateError)
    expect(() => renderer.compile("{% render '/etc/passwd' %}", "html")).toThrow(/\{% render %\} tag is not available/)
    expect(() => renderer.compile("{% layout 'x' %}hi", "html")).toThrow(TemplateError)
  })

  it("stops runaway templates fast: time and memory limits", async () => {
    const started = Date.now()
    await expect(html("{% for i in (1..100000) %}{% for j in (1..100000) %}x{% endfor %}{% endfor %}")).rejects.toThrow(/limit/)
    await expect(html("{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}{{ s }}"))
      .rejects.toThrow(/limit/)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(() => renderer.compile("x".repeat(1_000_001), "html")).toThrow(TemplateError)
  })

  it("stops producing output at the output cap, and counts captured text against the memory limit", async () => {
    // The output cap is what is tested here, not the time limit: a loaded machine gets time to spare.
    const patient = makeRenderer({ ...DEFAULT_LIMITS, renderLimit: 10_000 })
    const loop = patient.compile("{% for i in (1..5000) %}{{ html }}{% endfor %}", "html")
    await expect(loop.render(variables, 1_000)).rejects.toBeInstanceOf(OutputLimitError)
    await expect(loop.render(variables, 1_000)).rejects.toMatchObject({ limit: 1_000 })
    expect(await loop.render(variables, 10_000_000)).toHaveLength(5_000 * "&lt;b&gt;bold&lt;/b&gt;".length)
    // Doubling a capture 30 times would build a billion characters without ever writing output.
    const doubling = `{% capture s %}xxxxxxxxxx{% endcapture %}${"{% capture s %}{{ s }}{{ s }}{% endcapture %}".repeat(30)}{{ s | size }}`
    await expect(text(doubling)).rejects.toThrow(/memory alloc limit exceeded/)
  })

  it("reports syntax errors as TemplateError, whatever the input", () => {
    fc.assert(fc.property(fc.string(), (source) => {
      try {
        renderer.compile(source, "html")
      } catch (error) {
        expect(error).toBeInstanceOf(TemplateError)
      }
    }))
  })
})

describe("signed links", () => {
  const secret = "s3cret"

  it("rewrites http(s) links, keeps mailto, tel, anchors and our own pages, appends the pixel", () => {
    const out = addTracking(
      `<a href="https://a.example/x?y=1&amp;z=2">a</a><a href='mailto:x@y.z'>m</a><a href="tel:+1">t</a>` +
        `<a href="#top">#</a><a href="https://app.test/unsubscribe/t">u</a></body>`,
      { publicUrl: "https://app.test", secret, emailId: "e1" }
    )
    const signature = clickSignature(secret, "e1", "https://a.example/x?y=1&z=2")
    expect(out).toContain(`href="https://app.test/t/c/e1/${signature}?u=https%3A%2F%2Fa.example%2Fx%3Fy%3D1%26z%3D2"`)
    expect(out).toContain("href='mailto:x@y.z'")
    expect(out).toContain('href="tel:+1"')
    expect(out).toContain('href="#top"')
    expect(out).toContain('href="https://app.test/unsubscribe/t"')
    expect(out).toMatch(/<img src="https:\/\/app\.test\/t\/o\/e1\/[\w-]+\.gif"[^>]*\/><\/body>$/)
  })

  it("signs contact tokens per contact and project secret", () => {
    const links = contactLinks("https://app.test", secret, "c1")
    const token = links.unsubscribeUrl.split("/").at(-1)!
    const parsed = parseContactToken(token)!
    expect(contactSignatureValid(secret, "c1", parsed.signature)).toBe(true)
    expect(contactSignatureValid(secret, "c2", parsed.signature)).toBe(false)
    expect(contactSignatureValid("other", "c1", parsed.signature)).toBe(false)
    expect(parseContactToken("a.b.c")).toBeUndefined()
  })
})

describe("the throttle", () => {
  it("lets through exactly the configured rate over time", () => {
    const bucket = new TokenBucket(100, 0)
    let sent = 0
    for (let now = 0; now <= 60_000; now += 7) {
      const n = bucket.available(now, 1_000)
      bucket.take(n, now)
      sent += n
    }
    // 60 s at 100/s, plus the initial tenth of a second.
    expect(sent).toBeGreaterThanOrEqual(6_000)
    expect(sent).toBeLessThanOrEqual(6_011)
    expect(new TokenBucket(5, 0).waitMs(0)).toBe(0)
  })
})

describe("domain records", () => {
  const records = recordsFor("acme.test", { selector: "ms1", publicKey: "PUBKEY" })
  const dkim = records[0]!

  it("matches the DKIM key, ignoring spacing, and reports other keys as a mismatch", () => {
    expect(recordStatus(dkim, { _tag: "Found", records: ["v=DKIM1; k=rsa; p=PUB KEY"] })).toBe("VERIFIED")
    expect(recordStatus(dkim, { _tag: "Found", records: ["v=DKIM1; k=rsa; p=OTHER"] })).toBe("MISMATCH")
    expect(recordStatus(dkim, { _tag: "Found", records: ["unrelated"] })).toBe("MISSING")
    expect(recordStatus(dkim, { _tag: "None", nxdomain: true })).toBe("MISSING")
    expect(recordStatus(dkim, { _tag: "Failed", timedOut: true, code: "ETIMEOUT", reason: "timed out" })).toBe("UNKNOWN")
  })

  it("never changes a domain's status on an unknown answer", () => {
    const withDkim = (status: "VERIFIED" | "MISSING" | "MISMATCH" | "UNKNOWN") => [{ ...dkim, status }, ...records.slice(1)]
    expect(domainStatus("PENDING", withDkim("VERIFIED"))).toBe("VERIFIED")
    expect(domainStatus("VERIFIED", withDkim("MISMATCH"))).toBe("FAILED")
    expect(domainStatus("VERIFIED", withDkim("MISSING"))).toBe("PENDING")
    expect(domainStatus("PENDING", withDkim("UNKNOWN"))).toBe("PENDING")
    expect(domainStatus("VERIFIED", withDkim("UNKNOWN"))).toBe("VERIFIED")
  })
})
