/**
 * The Verifier and the Dns module against a real DNS server (dns2, test/support/dns.ts): every DNS
 * flag (existing / missing domain, MX / no MX, A only, null MX, timeouts), the per-domain cache, and
 * that an address failing syntax asks DNS nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll } from "vitest"
import { Dns } from "../../src/lib/dns.ts"
import { type Verification, Verifier, type VerifierOptions } from "../../src/verify/Verifier.ts"
import { startDnsServer, type TestDnsServer } from "../support/dns.ts"

let server: TestDnsServer

const MX = [{ exchange: "mx1.acme.test", priority: 10 }, { exchange: "mx2.acme.test", priority: 20 }]

beforeAll(async () => {
  server = await startDnsServer({
    "acme.test": { NS: ["ns1.acme.test"], MX, A: ["192.0.2.10"], AAAA: ["2001:db8::10"] },
    "mx-only.test": { NS: ["ns1.mx-only.test"], MX },
    "a-only.test": { A: ["192.0.2.11"] },
    "aaaa-only.test": { AAAA: ["2001:db8::11"] },
    "bare.test": { NS: ["ns1.bare.test"] },
    "null-mx.test": { NS: ["ns1.null-mx.test"], MX: [{ exchange: ".", priority: 0 }], A: ["192.0.2.12"] },
    "mail.sub.acme.test": { MX },
    "slow.test": { NS: ["ns1.slow.test"], MX, A: ["192.0.2.13"] },
    "slow-mx.test": { NS: ["ns1.slow-mx.test"], MX, A: ["192.0.2.14"] },
    "slow-a.test": { NS: ["ns1.slow-a.test"] },
    "flaky.test": { NS: ["ns1.flaky.test"], MX },
    "xn--bcher-kva.test": { NS: ["ns1.xn--bcher-kva.test"], MX },
    "mailinator.com": { NS: ["ns1.mailinator.com"], MX },
    "duck.com": { NS: ["ns1.duck.com"], MX },
    "gmail.com": { NS: ["ns1.google.com"], MX: [{ exchange: "gmail-smtp-in.l.google.com", priority: 5 }], A: ["192.0.2.20"] }
  })
  server.silence("slow.test")
  server.silence("slow-mx.test", ["MX"])
  server.silence("slow-a.test", ["A", "AAAA"])
})
afterAll(async () => {
  await server.close()
})

const TIMEOUT_MS = 300

const dns = () => Dns.make({ servers: [server.address], timeoutMs: TIMEOUT_MS })
const makeVerifier = (options: VerifierOptions = {}) => Verifier.make(options).pipe(Effect.provideServiceEffect(Dns, dns()))
const verify = (email: string) => Effect.flatMap(makeVerifier(), (verifier) => verifier.verify(email))
const queriesFor = (domain: string) => server.queries.filter((query) => query.name === domain).length

const flags = (result: Verification) => ({
  valid: result.valid,
  domainExists: result.domainExists,
  hasMxRecords: result.hasMxRecords,
  hasWebsite: result.hasWebsite
})

describe("DNS flags", () => {
  it.live("a domain with NS, MX, A and AAAA: valid, nothing to explain", () =>
    Effect.gen(function*() {
      const result = yield* verify("ada@acme.test")
      assert.deepStrictEqual(result, {
        email: "ada@acme.test",
        valid: true,
        isDisposable: false,
        isAlias: false,
        isTypo: false,
        isPlusAddressed: false,
        isPersonalEmail: false,
        domainExists: true,
        hasWebsite: true,
        hasMxRecords: true,
        reasons: []
      })
    }))

  const no = false
  const yes = true
  it.live.each([
    {
      what: "a missing domain (NXDOMAIN): nothing exists, one reason says so",
      domain: "missing.test",
      flags: { valid: no, domainExists: no, hasMxRecords: no, hasWebsite: no },
      reasons: ["The domain missing.test does not exist (NXDOMAIN), so it can receive no email and has no website."]
    },
    {
      what: "MX without A/AAAA: receives mail, no website",
      domain: "mx-only.test",
      flags: { valid: yes, domainExists: yes, hasMxRecords: yes, hasWebsite: no },
      reasons: ["mx-only.test has no A or AAAA record, so no website."]
    },
    ...["a-only.test", "aaaa-only.test"].map((domain) => ({
      what: `no MX but an address (${domain}): the implicit MX of RFC 5321 counts, and reasons say so`,
      domain,
      flags: { valid: yes, domainExists: yes, hasMxRecords: yes, hasWebsite: yes },
      reasons: [`${domain} has no MX record; mail is delivered to its A/AAAA address instead (implicit MX, RFC 5321 §5.1).`]
    })),
    {
      what: "no MX and no address: the domain exists but cannot receive mail",
      domain: "bare.test",
      flags: { valid: no, domainExists: yes, hasMxRecords: no, hasWebsite: no },
      reasons: [
        "bare.test has no MX record and no A/AAAA address, so it cannot receive email.",
        "bare.test has no A or AAAA record, so no website."
      ]
    },
    {
      what: "a null MX (RFC 7505) means no mail, even with an A record",
      domain: "null-mx.test",
      flags: { valid: no, domainExists: yes, hasMxRecords: no, hasWebsite: yes },
      reasons: ["null-mx.test publishes a null MX record: it accepts no email (RFC 7505)."]
    },
    {
      what: "a subdomain without its own NS exists (NODATA is not NXDOMAIN)",
      domain: "mail.sub.acme.test",
      flags: { valid: yes, domainExists: yes, hasMxRecords: yes, hasWebsite: no },
      reasons: ["mail.sub.acme.test has no A or AAAA record, so no website."]
    },
    {
      what: "a domain that never answers: every flag false, each timeout reported, nothing guessed",
      domain: "slow.test",
      flags: { valid: no, domainExists: no, hasMxRecords: no, hasWebsite: no },
      reasons: [
        "Could not tell whether the domain slow.test exists: its DNS lookups timed out.",
        "Could not tell whether slow.test accepts email: the MX lookup timed out.",
        "Could not tell whether slow.test has a website: the A/AAAA lookup timed out."
      ]
    },
    {
      what: "an MX lookup that times out: the domain exists, whether it takes mail is unknown",
      domain: "slow-mx.test",
      flags: { valid: no, domainExists: yes, hasMxRecords: no, hasWebsite: yes },
      reasons: ["Could not tell whether slow-mx.test accepts email: the MX lookup timed out."]
    },
    {
      what: "no MX and an A/AAAA lookup that times out: the implicit MX is not assumed",
      domain: "slow-a.test",
      flags: { valid: no, domainExists: yes, hasMxRecords: no, hasWebsite: no },
      reasons: [
        "slow-a.test has no MX record, and the A/AAAA lookup for its implicit MX timed out.",
        "Could not tell whether slow-a.test has a website: the A/AAAA lookup timed out."
      ]
    }
  ])("$what", (expected) =>
    Effect.gen(function*() {
      const started = Date.now()
      const result = yield* verify(`ada@${expected.domain}`)
      // Lookups run at once, each with its own short timeout.
      assert.isBelow(Date.now() - started, TIMEOUT_MS * 2 + 500)
      assert.deepStrictEqual(flags(result), expected.flags)
      assert.deepStrictEqual(result.reasons, expected.reasons)
    }))
})

describe("address flags with DNS", () => {
  it.live("a disposable domain is never valid, whatever its DNS says", () =>
    Effect.gen(function*() {
      const result = yield* verify("ada@mailinator.com")
      assert.include(result, { valid: false, isDisposable: true, domainExists: true, hasMxRecords: true })
      assert.deepStrictEqual(result.reasons, [
        "mailinator.com is a disposable (throw-away) email domain.",
        "mailinator.com has no A or AAAA record, so no website."
      ])
    }))

  it.live("an alias service, plus-addressing and a personal provider are reported and stay valid", () =>
    Effect.gen(function*() {
      assert.include(yield* verify("x7k2@duck.com"), { valid: true, isAlias: true, isPersonalEmail: false })
      assert.include(yield* verify("ada+news@gmail.com"), {
        email: "ada+news@gmail.com",
        valid: true,
        isPlusAddressed: true,
        isPersonalEmail: true,
        hasWebsite: true
      })
    }))

  it.live("a typo carries suggestedEmail; the typed domain is still looked up as typed", () =>
    Effect.gen(function*() {
      const result = yield* verify("user@gmial.com")
      assert.include(result, { isTypo: true, suggestedEmail: "user@gmail.com", domainExists: false, valid: false })
      assert.include(result.reasons, "The domain looks like a typo: did you mean user@gmail.com?")
      assert.isFalse("suggestedEmail" in (yield* verify("user@gmail.com")))
    }))

  it.live("an IDN domain is looked up in its ASCII form", () =>
    Effect.gen(function*() {
      const result = yield* verify("Ada@Bücher.test")
      assert.include(result, { email: "ada@xn--bcher-kva.test", valid: true, domainExists: true, hasMxRecords: true })
    }))

  it.live("an address that fails syntax asks DNS nothing", () =>
    Effect.gen(function*() {
      const before = server.queries.length
      const result = yield* verify("ada@@acme.test")
      assert.deepStrictEqual(flags(result), { valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false })
      assert.deepStrictEqual(result.reasons, [
        "The part before the @ contains characters or dots an email address cannot have.",
        "The domain was not looked up because the address is not valid."
      ])
      yield* verify("not an address")
      yield* verify("ada@localhost")
      assert.strictEqual(server.queries.length, before)
    }))
})

describe("per-domain cache", () => {
  it.effect("answers from the cache for five minutes, then asks again", () =>
    Effect.gen(function*() {
      const verifier = yield* makeVerifier()
      server.set("cached.test", { NS: ["ns1.cached.test"], MX })
      yield* verifier.verify("a@cached.test")
      assert.strictEqual(queriesFor("cached.test"), 4)
      // Another address at the same domain, and a change in DNS, within the TTL: no new question.
      server.remove("cached.test")
      assert.isTrue((yield* verifier.verify("b@Cached.test")).domainExists)
      assert.strictEqual(queriesFor("cached.test"), 4)
      yield* TestClock.adjust(Duration.minutes(5).pipe(Duration.sum(Duration.seconds(1))))
      assert.isFalse((yield* verifier.verify("a@cached.test")).domainExists)
      assert.strictEqual(queriesFor("cached.test"), 8)
    }))

  it.effect("concurrent verifications of one domain share one set of lookups", () =>
    Effect.gen(function*() {
      const verifier = yield* makeVerifier()
      server.set("shared.test", { MX })
      const results = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => `user${i}@shared.test`),
        verifier.verify,
        { concurrency: "unbounded" }
      )
      assert.isTrue(results.every((result) => result.valid))
      assert.strictEqual(queriesFor("shared.test"), 4)
    }))

  it.live("keeps answers with a timeout only briefly", () =>
    Effect.gen(function*() {
      const verifier = yield* makeVerifier({ failureTtl: "200 millis" })
      server.silence("flaky.test")
      assert.isFalse((yield* verifier.verify("a@flaky.test")).domainExists)
      server.unsilence("flaky.test")
      assert.isFalse((yield* verifier.verify("a@flaky.test")).domainExists)
      yield* Effect.sleep("250 millis")
      assert.include(yield* verifier.verify("a@flaky.test"), { valid: true, domainExists: true })
    }))
})

describe("Dns", () => {
  it.live("TXT records: one string per record, long ones reassembled; added and removed at runtime", () =>
    Effect.gen(function*() {
      const client = yield* dns()
      const dkim = `v=DKIM1; k=rsa; p=${"A".repeat(392)}`
      server.set("txt.test", { TXT: ["v=spf1 include:_spf.acme.test -all"] })
      server.addTxt("sel._domainkey.txt.test", dkim)
      assert.deepStrictEqual(yield* client.txt("txt.test"), { _tag: "Found", records: ["v=spf1 include:_spf.acme.test -all"] })
      assert.deepStrictEqual(yield* client.txt("sel._domainkey.txt.test"), { _tag: "Found", records: [dkim] })
      server.removeTxt("sel._domainkey.txt.test", dkim)
      assert.deepStrictEqual(yield* client.txt("sel._domainkey.txt.test"), { _tag: "None", nxdomain: false })
      assert.deepStrictEqual(yield* client.txt("_dmarc.txt.test"), { _tag: "None", nxdomain: true })
    }))

  it.live("typed outcomes: found, NODATA, NXDOMAIN, timeout, bad name", () =>
    Effect.gen(function*() {
      const client = yield* dns()
      assert.deepStrictEqual(yield* client.mx("acme.test"), { _tag: "Found", records: MX })
      assert.deepStrictEqual(yield* client.ns("a-only.test"), { _tag: "None", nxdomain: false })
      assert.deepStrictEqual(yield* client.a("missing.test"), { _tag: "None", nxdomain: true })
      assert.deepStrictEqual(yield* client.a("slow.test"), { _tag: "Failed", timedOut: true, code: "ETIMEOUT", reason: "timed out" })
      const bad = yield* client.a("bad..name")
      assert.include(bad, { _tag: "Failed", timedOut: false, code: "EBADNAME" })
    }))

  it.live("an unreachable server is a failure, not an answer", () =>
    Effect.gen(function*() {
      // A port nothing listens on: ECONNREFUSED, or a timeout where ICMP is dropped.
      const client = yield* Dns.make({ servers: ["127.0.0.1:9"], timeoutMs: TIMEOUT_MS })
      const answer = yield* client.mx("acme.test")
      assert.strictEqual(answer._tag, "Failed")
    }))

  it.effect("refuses DNS_SERVERS that are not addresses", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Dns.make({ servers: ["not a server"] }))
      assert.isTrue(Exit.isFailure(exit))
    }))
})
