/**
 * Export, then import into an empty project, gives back the same contacts (docs/api-notes.md's promise), as a
 * property over random contacts through HTTP: emails and data keys and values a spreadsheet would run as
 * formulas (`=`, `+`, `-`, `@`, tab, CR, and those behind apostrophes), strings that read as numbers,
 * booleans, JSON or dates, quotes, separators and line breaks, unicode, numbers of every size, booleans,
 * nested objects and arrays; keys that read as the standard columns (`Email`, `subscribed`, `createdAt`),
 * with dots, with spaces around them. Each run: its contacts created with POST /contacts in a new
 * project, GET /contacts/export, POST /contacts/import of that file into another new project, and every
 * contact of the copy equal to its original (email, subscribed, data deep-equal, as GET /contacts shows them).
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jobCompleted, uploadContacts } from "../support/imports.ts"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"

let stack: Stack
let api: Service

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("all")
})
afterAll(async () => {
  await stack?.stop()
})

/** Text a spreadsheet or our own cell typing could misread. */
const TRICKY_TEXT = [
  "-5",
  "+5",
  "5",
  "-1.5",
  "007",
  "1e5",
  "12345678901234567890",
  "true",
  "TRUE",
  "False",
  "null",
  "NaN",
  "Infinity",
  "-0",
  '{"a":1}',
  "[1,2]",
  "{not json}",
  '"hi"',
  '"',
  '""',
  "'",
  "''",
  "'=2+5",
  "=2+5",
  "'-5",
  "''=x",
  "'''+1",
  "@SUM(A1)",
  '=HYPERLINK("http://x")',
  "\tlead",
  "\rcr",
  "line\nbreak",
  "crlf\r\nbreak",
  "a,b;c\td",
  "2024-05-01",
  "2024-05-01T10:00:00Z",
  " spaced ",
  "é ü 😀 中文",
  "'abc",
  "ignore"
]

/** Strings Postgres can store in jsonb (no NUL). */
const text = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...TRICKY_TEXT) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
  {
    weight: 1,
    arbitrary: fc.string({ unit: fc.constantFrom("=", "+", "-", "@", "'", '"', "\t", "\r", "\n", ",", ";", "1", "e", " "), maxLength: 6 })
  }
).filter((value) => !value.includes("\u0000"))

const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(2 ** 53 + 2, -(2 ** 60), 1e21, 1.7976931348623157e308, 5e-324, -1.5e-300, 0.1, 123456789.125)
)

const scalar = fc.oneof(text, number, fc.boolean())

const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(fc.oneof(scalar, fc.constant(null)), { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(
      text.filter((key) => key !== "__proto__"),
      fc.oneof(scalar, fc.constant(null), fc.array(scalar, { maxLength: 2 })),
      { maxKeys: 3 }
    )
  }
)

const KEYS = [
  "plan",
  "Email",
  "E-Mail Address",
  "subscribed",
  "Subscribed",
  "createdAt",
  "updatedAt",
  "a.b",
  "profile.tier",
  " padded ",
  "=sum",
  "-minus",
  "+plus",
  "@at",
  "'=quoted",
  '"quoted"',
  "\tkey",
  "ignore",
  "中文",
  "emoji 😀"
]
const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...KEYS) },
  {
    weight: 1,
    arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 }).filter((name) =>
      !name.includes("\u0000") && name !== "__proto__"
    )
  }
)

/** Local parts of valid addresses that start as formulas do, or behind apostrophes. */
const EMAIL_LOCAL_PARTS = ["=2+5", "'=2+5", "-x", "+x", "'x", "''=y", "'+1"]
const contacts = fc.uniqueArray(
  fc.record({
    local: fc.oneof(fc.constantFrom(...EMAIL_LOCAL_PARTS), fc.stringMatching(/^[a-z0-9]{1,8}$/)),
    subscribed: fc.boolean(),
    data: fc.dictionary(key, value, { maxKeys: 6 })
  }),
  { minLength: 1, maxLength: 25, selector: (contact) => contact.local }
)

interface StoredContact {
  readonly email: string
  readonly subscribed: boolean
  readonly data: Record<string, unknown>
}

/** Every contact of the project, as GET /contacts shows them, by email. */
const allContacts = async (key: string) => {
  const found: Array<StoredContact> = []
  let cursor: string | null = null
  do {
    const page = await request(api.url, "GET", `/contacts?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key })
    expect(page.status).toBe(200)
    found.push(...page.json.data.map(({ email, subscribed, data }: StoredContact) => ({ email, subscribed, data })))
    cursor = page.json.cursor
  } while (cursor)
  return found.sort((a, b) => (a.email < b.email ? -1 : 1))
}

const importFile = async (csv: string, key: string) => {
  const accepted = await uploadContacts(api.url, key, csv)
  expect(accepted.status, accepted.text).toBe(202)
  return jobCompleted(api.url, key, accepted.json.jobId)
}

describe("export → import", () => {
  it("reproduces every contact exactly in an empty project", async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(contacts, async (generated) => {
        run++
        const source = await stack.createProject(`Source ${run}`)
        for (const contact of generated) {
          const created = await request(api.url, "POST", "/contacts", {
            key: source.secretKey,
            body: { email: `${contact.local}@example.com`, subscribed: contact.subscribed, data: contact.data }
          })
          expect([200, 201], `${created.status} ${created.text}`).toContain(created.status)
        }
        const exported = await fetch(`${api.url}/contacts/export`, { headers: { authorization: `Bearer ${source.secretKey}` } })
        expect(exported.status).toBe(200)
        const csv = await exported.text()

        const copy = await stack.createProject(`Copy ${run}`)
        const job = await importFile(csv, copy.secretKey)
        expect(job.errors, csv).toEqual([])
        expect(await allContacts(copy.secretKey), csv).toEqual(await allContacts(source.secretKey))
      }),
      { numRuns: 15, endOnFailure: true }
    )
  }, 300_000)
})
