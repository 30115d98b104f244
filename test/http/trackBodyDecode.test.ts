/**
 * /v1/track bodies (and each event of /v1/track/batch) are checked by plain code first
 * (`trackBodyAsIs`, with the predicates of TrackBody's filters) and by the schema only when that code
 * does not take them. The two must agree: every body the plain checks take decodes with the schema
 * to the same payload, every body the schema accepts (with only TrackBody's keys) is taken by the
 * plain checks, and `decodeTrackBody` answers what the schema answers, success or errors.
 */
import { Result, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { TrackBody } from "../../src/http/api/track.ts"
import { decodeTrackBody, trackBodyAsIs } from "../../src/http/handlers/trackedEvent.ts"
import { issueToFieldErrors } from "../../src/http/api/fieldErrors.ts"

const bySchema = Schema.decodeUnknownResult(Schema.Union([TrackBody]), { errors: "all" })

const answerOf = (result: ReturnType<typeof bySchema>) =>
  Result.isSuccess(result) ? { payload: result.success } : { errors: issueToFieldErrors(result.failure.issue) }

const deep = (levels: number): unknown => levels === 0 ? "leaf" : { next: deep(levels - 1) }

const email = fc.oneof(
  fc.emailAddress(),
  fc.emailAddress().map((value) => ` ${value.toUpperCase()} `),
  fc.constantFrom("a@b.co", "not-an-email", "", "x@y", "a\u0000@b.co", "a\ud800@b.co", `${"a".repeat(65)}@b.co`, `a@${"b".repeat(250)}.co`),
  fc.string(),
  fc.constantFrom(null, 42, true, ["a@b.co"], { email: "a@b.co" })
)

const eventName = fc.oneof(
  fc.constantFrom(
    "page_view",
    "Signed Up",
    " padded ",
    "x".repeat(255),
    "x".repeat(256),
    "",
    "   ",
    "tab\there",
    "nul\u0000",
    "lone\udc00"
  ),
  fc.constantFrom(
    "email.sent",
    " email.opened",
    "contact.subscribed",
    "contact.unsubscribed",
    "segment.vip.entry",
    "segment.vip.exit",
    "segment.vip.other"
  ),
  fc.string({ maxLength: 300 }),
  fc.constantFrom(null, 7, false, ["click"])
)

const flag = fc.constantFrom(true, false, null, "true", 1)

const data = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 })),
  fc.constantFrom(
    {},
    { plan: "pro", seats: 3, nested: { a: [1, { b: null }] } },
    { removed: null, empty: "", once: { value: 1, persistent: false } },
    { bad: "nul\u0000" },
    { ["key\u0000"]: 1 },
    { lone: "\ud800" },
    deep(40),
    deep(30),
    null,
    [1, 2],
    "text",
    5
  ),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}}') as unknown)
)

/** A body as a request carries it: any subset of TrackBody's keys, sometimes a key it does not declare. */
const body = fc.record(
  { email, event: eventName, subscribed: flag, preserveExistingSubscription: flag, data, extra: fc.constantFrom("x", 1) },
  { requiredKeys: [] }
).map((value) => {
  // Mostly without the undeclared key, so most bodies can be valid.
  const { extra, ...rest } = value
  return extra === "x" ? value : rest
})

/** Bodies most of which are valid: the plain path's own ground. */
const likelyValid = fc.record(
  {
    email: fc.oneof(fc.emailAddress(), fc.constantFrom("a@b.co", " Mixed.Case@Example.COM ")),
    event: fc.oneof(fc.constantFrom("page_view", "Signed Up", "segment.vip.other"), fc.string({ minLength: 1, maxLength: 40 })),
    subscribed: fc.boolean(),
    preserveExistingSubscription: fc.boolean(),
    data: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }))
  },
  { requiredKeys: ["email", "event"] }
)

describe("a /v1/track body", () => {
  it("is taken by the plain checks exactly when the schema accepts it, with the same payload", () => {
    let taken = 0
    fc.assert(
      fc.property(fc.oneof(likelyValid, body), (input) => {
        const fast = trackBodyAsIs(input)
        const schema = bySchema(input)
        const declaredOnly = Object.keys(input).every((key) => key !== "extra")
        if (fast !== undefined) {
          taken++
          expect(Result.isSuccess(schema)).toBe(true)
          expect(fast).toStrictEqual(Result.getOrThrow(schema))
        } else if (declaredOnly) {
          expect(Result.isFailure(schema)).toBe(true)
        }
        expect(answerOf(decodeTrackBody(input))).toStrictEqual(answerOf(schema))
      }),
      { numRuns: 5_000 }
    )
    // The generator must reach the plain path often enough to mean something.
    expect(taken).toBeGreaterThan(1_000)
  })

  it("keeps the schema's treatment of undeclared keys: dropped from the payload", () => {
    const input = { email: "a@b.co", event: "click", source: "web" }
    expect(trackBodyAsIs(input)).toBeUndefined()
    expect(decodeTrackBody(input)).toStrictEqual(Result.succeed({ email: "a@b.co", event: "click" }))
  })

  it("gives the payload its own data object, as the schema does", () => {
    const input = { email: "a@b.co", event: "click", data: { plan: "pro" } }
    const decoded = Result.getOrThrow(decodeTrackBody(input))
    expect(decoded.data).toStrictEqual({ plan: "pro" })
    expect(decoded.data).not.toBe(input.data)
  })
})
