import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, readStream } from "../support/nats.ts"
import { jobCompleted, uploadContacts } from "../support/imports.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject
let other: TestProject

const secret = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("all")
  project = await stack.createProject("Importer")
  other = await stack.createProject("Other")
})
afterAll(async () => {
  await stack?.stop()
})

const upload = (file: string | Uint8Array, fields: Record<string, string> = {}, key = project.secretKey) =>
  uploadContacts(api.url, key, file, fields)

const finished = (jobId: string, kind = "import", key = project.secretKey) => jobCompleted(api.url, key, jobId, kind)

const importFile = async (file: string | Uint8Array, fields: Record<string, string> = {}, key = project.secretKey) => {
  const accepted = await upload(file, fields, key)
  expect(accepted.status, JSON.stringify(accepted.json)).toBe(202)
  return finished(accepted.json.jobId, "import", key)
}

const contact = async (email: string, key = project.secretKey) => {
  const found = await request(api.url, "POST", "/contacts/lookup", { key, body: { emails: [email] } })
  const id = found.json.results[0].contact?.id
  return id ? (await request(api.url, "GET", `/contacts/${id}`, { key })).json : undefined
}

describe("POST /contacts/import: dialects", () => {
  it("reads commas with CRLF and a BOM, quoted fields with newlines and delimiters, and infers types", async () => {
    const file = "\uFEFFEmail,Subscribed,plan,seats,trial,since,notes\r\n" +
      'Dia1@Example.com,yes,pro,3,true,2024-05-01,"line one\r\nline two, with a comma"\r\n' +
      'dia2@example.com,0,free,,false,,"she said ""hi"""\r\n'
    const job = await importFile(file)
    expect(job).toMatchObject({
      type: "import",
      status: "COMPLETED",
      progress: { processed: 2, total: 2, created: 2, updated: 0, skipped: 0, failed: 0 },
      errors: []
    })
    expect(job.startedAt).not.toBeNull()
    expect(job.finishedAt).not.toBeNull()
    const one = await contact("dia1@example.com")
    expect(one).toMatchObject({
      subscribed: true,
      data: { plan: "pro", seats: 3, trial: true, since: "2024-05-01", notes: "line one\r\nline two, with a comma" }
    })
    const two = await contact("dia2@example.com")
    // An empty cell sets nothing.
    expect(two).toMatchObject({ subscribed: false, data: { plan: "free", trial: false, notes: 'she said "hi"' } })
    expect(two.data).not.toHaveProperty("seats")
    const fields = (await secret("GET", "/contacts/fields")).json.fields
    expect(fields).toEqual(expect.arrayContaining([
      expect.objectContaining({ field: "data.seats", type: "number" }),
      expect.objectContaining({ field: "data.since", type: "date" }),
      expect.objectContaining({ field: "data.trial", type: "boolean" })
    ]))
  })

  it("reads a file cut into ranges at record boundaries: quoted line breaks, CRLF and a BOM across them", async () => {
    const lines = ["\uFEFFemail;notes;n"]
    for (let i = 0; i < 12_345; i++) lines.push(`range${i}@example.com;"line ${i}\r\nnext; ""quoted""";${i}`)
    const job = await importFile(lines.join("\r\n") + "\r\n")
    expect(job.progress).toMatchObject({ processed: 12_345, created: 12_345, skipped: 0, failed: 0 })
    for (const i of [0, 4_999, 5_000, 10_000, 12_344]) {
      expect((await contact(`range${i}@example.com`)).data).toEqual({ notes: `line ${i}\r\nnext; "quoted"`, n: i })
    }
  }, 60_000)

  it("detects semicolons and tabs, and takes `Email Address` as the email", async () => {
    await importFile("Email Address;city;score\nsemi@example.com;Lyon, FR;1.5\n")
    expect((await contact("semi@example.com")).data).toEqual({ city: "Lyon, FR", score: 1.5 })
    await importFile("email\tcity\ntab@example.com\tOslo; NO\n")
    expect((await contact("tab@example.com")).data).toEqual({ city: "Oslo; NO" })
  })

  it("names each column's key by the spec's rule: a two-word title is a lower-case key with a space", async () => {
    // Custom fields, rule 6: `First Name` is the key `first name`, read as {{first name}} or data["first name"].
    const job = await importFile('Email,First Name,Last Name,"""Exact Case"""\nrule6@example.com,Ada,Lovelace,kept\n')
    expect(job).toMatchObject({ status: "COMPLETED", progress: { created: 1 }, errors: [] })
    const imported = await contact("rule6@example.com")
    expect(imported.data).toEqual({ "first name": "Ada", "last name": "Lovelace", "Exact Case": "kept" })
    const fields = (await secret("GET", "/contacts/fields")).json.fields.map((field: { field: string }) => field.field)
    expect(fields).toEqual(expect.arrayContaining(["data.first name", "data.last name"]))
    expect(fields).not.toContain("data.First Name")
    // A mapping names its key exactly.
    await importFile("email,First Name\nrule6b@example.com,Bo\n", { mapping: JSON.stringify({ "First Name": "firstName" }) })
    expect((await contact("rule6b@example.com")).data).toEqual({ firstName: "Bo" })
  })

  it("applies the mapping and the form's default subscription", async () => {
    const file = "E-Mail-Adresse,Tarif,Intern\nmapped@example.com,gold,secret\n"
    const job = await importFile(file, {
      mapping: JSON.stringify({ "E-Mail-Adresse": "email", Tarif: "tier", Intern: "ignore" }),
      subscribed: "false"
    })
    expect(job.progress).toMatchObject({ created: 1 })
    expect(await contact("mapped@example.com")).toMatchObject({ subscribed: false, data: { tier: "gold" } })
    const badMapping = await upload(file, { mapping: JSON.stringify({ Nope: "email" }) })
    expect(badMapping.status).toBe(422)
    expect(badMapping.json.error.errors[0]).toMatchObject({ field: "file" })
    expect(badMapping.json.error.errors[0].message).toContain("Nope")
    expect((await upload(file, { mapping: "{not json" })).json.error.errors[0]).toMatchObject({ field: "mapping" })
    expect((await upload(file, { subscribed: "maybe" })).json.error.errors[0]).toMatchObject({ field: "subscribed" })
  })
})

describe("POST /contacts/import: bad rows and bad files", () => {
  it("reports and skips each bad row without failing the job; the last of duplicate emails wins", async () => {
    const file = [
      "email,subscribed,id,plan",
      "good@example.com,true,x1,basic", // row 2
      "not-an-email,true,,basic", // row 3
      ",true,,basic", // row 4
      "dup@example.com,true,,first", // row 5
      "odd@example.com,perhaps,,basic", // row 6
      "DUP@example.com,false,,second" // row 7
    ].join("\n")
    const job = await importFile(file)
    expect(job.progress).toEqual({ processed: 6, total: 6, created: 2, updated: 0, skipped: 4, failed: 0 })
    expect(job.errors).toEqual([
      { row: 1, reason: expect.stringContaining('reserved key "id"') },
      { row: 3, email: "not-an-email", reason: "invalid email" },
      { row: 4, reason: "missing email" },
      { row: 5, email: "dup@example.com", reason: "duplicate email in the file: row 7 has it too, and the last row wins" },
      { row: 6, email: "odd@example.com", reason: expect.stringContaining("subscribed must be") }
    ])
    expect(await contact("dup@example.com")).toMatchObject({ subscribed: false, data: { plan: "second" } })
    expect((await contact("good@example.com")).data).toEqual({ plan: "basic" })
  })

  it("refuses a file over 5 MB (413), a file that is not CSV text or has no email column (422), and leaves no job", async () => {
    const big = "email,pad\n" + `a@example.com,${"x".repeat(5 * 1024 * 1024)}\n`
    const tooLarge = await upload(big)
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.json.error).toMatchObject({ code: "PAYLOAD_TOO_LARGE" })

    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0xff, 0xfe])
    const binary = await upload(png)
    expect(binary.status).toBe(422)
    expect(binary.json.error.errors[0].message).toMatch(/not UTF-8 text|not text/)

    const unclosed = await upload('email,notes\nq@example.com,"never closed\n')
    expect(unclosed.status).toBe(422)
    expect(unclosed.json.error.errors[0].message).toContain("not valid CSV")

    const noEmail = await upload("name,plan\nAda,pro\n")
    expect(noEmail.status).toBe(422)
    expect(noEmail.json.error.errors[0].message).toContain("no email column")

    const empty = await upload("")
    expect(empty.status).toBe(422)

    const [{ n }] = (await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM contact_jobs WHERE project_id = $1 AND failure IS NOT NULL",
      [project.id]
    )) as [{ n: number }]
    expect(n).toBe(0)
  })

  it("answers 404 for another project's job and for ids that are not jobs", async () => {
    const accepted = await upload("email\nmine@example.com\n")
    await finished(accepted.json.jobId)
    expect((await secret("GET", `/contacts/import/${accepted.json.jobId}`, undefined, other.secretKey)).status).toBe(404)
    expect((await secret("GET", `/contacts/bulk/${accepted.json.jobId}`)).status).toBe(404)
    expect((await secret("GET", "/contacts/import/nope")).status).toBe(404)
  })
})

describe("POST /contacts/import: through the stream", () => {
  it("updates on a second import of the same file, never duplicates", async () => {
    const rows = Array.from({ length: 300 }, (_, i) => `again${i}@example.com,${i}`)
    const file = ["email,n", ...rows].join("\n")
    expect((await importFile(file)).progress).toMatchObject({ processed: 300, created: 300, updated: 0 })
    expect((await importFile(file)).progress).toMatchObject({ processed: 300, created: 0, updated: 300 })
    const [{ n }] = (await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND email LIKE 'again%'",
      [project.id]
    )) as [{ n: number }]
    expect(n).toBe(300)
  })

  it("moves segments and starts workflows for imported contacts, and emits subscription changes", async () => {
    const segment = await secret("POST", "/segments", {
      name: "Imported pros",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "pro" }] }] },
      trackMembership: true
    })
    expect(segment.status).toBe(201)
    const workflow = await secret("POST", "/workflows", { name: "Welcome pros", eventName: "segment.imported-pros.entry" })
    const delay = await secret("POST", `/workflows/${workflow.json.id}/steps`, { type: "DELAY", config: { amount: 1, unit: "days" } })
    await secret("POST", `/workflows/${workflow.json.id}/transitions`, { fromStepId: workflow.json.steps[0].id, toStepId: delay.json.id })
    expect((await secret("PATCH", `/workflows/${workflow.json.id}`, { enabled: true })).status).toBe(200)

    await secret("POST", "/contacts", { email: "leaver@example.com", subscribed: true })
    await importFile(
      "email,tier,subscribed\npro1@example.com,pro,\npro2@example.com,pro,\nbasic@example.com,basic,\nleaver@example.com,,no\n"
    )
    await eventually(async () => {
      expect((await secret("GET", `/segments/${segment.json.id}`)).json.memberCount).toBe(2)
      const executions = await secret("GET", `/workflows/${workflow.json.id}/executions`)
      expect(executions.json.total).toBe(2)
      const leaver = await contact("leaver@example.com")
      expect(leaver.subscribed).toBe(false)
      const events = await secret("GET", `/events/contact/${leaver.id}`)
      expect(JSON.stringify(events.json)).toContain("contact.unsubscribed")
    }, 15_000)
  })
})

describe("bulk jobs", () => {
  it("bulk-unsubscribes 1,000 ids mixing own, foreign, deleted and malformed ones; only own contacts change", async () => {
    const own: Array<string> = []
    const file = ["email", ...Array.from({ length: 700 }, (_, i) => `bulk${i}@example.com`)].join("\n")
    await importFile(file)
    const ids = await stack.query<{ id: string }>("SELECT id FROM contacts WHERE project_id = $1 AND email LIKE 'bulk%' ORDER BY email", [
      project.id
    ])
    own.push(...ids.map((row) => row.id))
    await importFile(["email", ...Array.from({ length: 200 }, (_, i) => `foreign${i}@example.com`)].join("\n"), {}, other.secretKey)
    const foreign = (await stack.query<{ id: string }>("SELECT id FROM contacts WHERE project_id = $1", [other.id])).map((row) => row.id)
    // 100 of ours deleted before the job.
    const deleted = own.slice(600, 700)
    for (const id of deleted) expect((await secret("DELETE", `/contacts/${id}`)).status).toBe(204)
    const contactIds = [...own.slice(0, 600), ...foreign.slice(0, 200), ...deleted, ...Array.from({ length: 100 }, (_, i) => `nope-${i}`)]
    expect(contactIds).toHaveLength(1000)

    const accepted = await secret("POST", "/contacts/bulk-unsubscribe", { contactIds })
    expect(accepted.status).toBe(202)
    const job = await finished(accepted.json.jobId, "bulk")
    expect(job).toMatchObject({ type: "unsubscribe", progress: { processed: 1000, total: 1000, updated: 600, skipped: 400, failed: 0 } })
    expect(job.errors).toHaveLength(100)
    expect(job.errors[0]).toEqual({ row: 601, contactId: foreign[0], reason: "contact not found" })
    const [{ n }] = (await stack.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND email LIKE 'bulk%' AND NOT subscribed",
      [project.id]
    )) as [{ n: number }]
    expect(n).toBe(600)
    const [{ untouched }] = (await stack.query<{ untouched: number }>(
      "SELECT count(*)::int AS untouched FROM contacts WHERE project_id = $1 AND subscribed",
      [other.id]
    )) as [{ untouched: number }]
    expect(untouched).toBe(200)

    const resubscribed = await finished(
      (await secret("POST", "/contacts/bulk-subscribe", { contactIds: own.slice(0, 10) })).json.jobId,
      "bulk"
    )
    expect(resubscribed.progress).toMatchObject({ processed: 10, updated: 10 })
    expect((await secret("GET", `/contacts/${own[0]}`)).json.subscribed).toBe(true)
  })

  it("bulk-deletes: contacts leave their segments with exit events and their workflow executions are cancelled", async () => {
    const segment = await secret("POST", "/segments", {
      name: "Doomed",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.doomed", operator: "equals", value: true }] }] },
      trackMembership: true
    })
    const workflow = await secret("POST", "/workflows", { name: "Doomed flow", eventName: "segment.doomed.entry" })
    const delay = await secret("POST", `/workflows/${workflow.json.id}/steps`, { type: "DELAY", config: { amount: 1, unit: "days" } })
    await secret("POST", `/workflows/${workflow.json.id}/transitions`, { fromStepId: workflow.json.steps[0].id, toStepId: delay.json.id })
    await secret("PATCH", `/workflows/${workflow.json.id}`, { enabled: true })
    await importFile("email,doomed\ndoomed1@example.com,true\ndoomed2@example.com,true\n")
    await eventually(
      async () => expect((await secret("GET", `/workflows/${workflow.json.id}/executions?status=waiting`)).json.total).toBe(2),
      15_000
    )
    const ids = [(await contact("doomed1@example.com")).id, (await contact("doomed2@example.com")).id]

    const job = await finished((await secret("POST", "/contacts/bulk-delete", { contactIds: ids })).json.jobId, "bulk")
    expect(job.progress).toMatchObject({ processed: 2, updated: 2 })
    expect((await secret("GET", `/contacts/${ids[0]}`)).status).toBe(404)
    await eventually(async () => {
      expect((await secret("GET", `/segments/${segment.json.id}`)).json.memberCount).toBe(0)
      expect((await secret("GET", `/workflows/${workflow.json.id}/executions?status=cancelled`)).json.total).toBe(2)
      const exits = await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${project.id}.segment.doomed.exit`)
      expect(exits.map((m) => m.data.email).sort()).toEqual(["doomed1@example.com", "doomed2@example.com"])
    }, 15_000)
  })

  it("refuses an empty or oversized list (422)", async () => {
    expect((await secret("POST", "/contacts/bulk-delete", { contactIds: [] })).status).toBe(422)
    expect((await secret("POST", "/contacts/bulk-delete", { contactIds: Array.from({ length: 1001 }, () => "x") })).status).toBe(422)
  })
})

describe("GET /contacts/export", () => {
  it("streams CSV with formulas escaped, and importing it elsewhere reproduces the contacts", async () => {
    const target = await stack.createProject("Round trip")
    await secret("POST", "/contacts", {
      email: "formula@example.com",
      subscribed: false,
      data: { note: '=HYPERLINK("x")', delta: -5, meta: { a: 1 }, zip: "007" }
    })
    const exported = await fetch(`${api.url}/contacts/export`, { headers: { authorization: `Bearer ${project.secretKey}` } })
    expect(exported.status).toBe(200)
    expect(exported.headers.get("content-type")).toContain("text/csv")
    const csv = await exported.text()
    expect(csv.split("\n")[0]).toMatch(/^email,subscribed,createdAt,/)
    expect(csv).toContain("'=HYPERLINK")

    await importFile(csv, {}, target.secretKey)
    const source = await stack.query<{ email: string; subscribed: boolean; data: unknown }>(
      "SELECT email, subscribed, data FROM contacts WHERE project_id = $1 ORDER BY email",
      [project.id]
    )
    const copy = await stack.query<{ email: string; subscribed: boolean; data: unknown }>(
      "SELECT email, subscribed, data FROM contacts WHERE project_id = $1 ORDER BY email",
      [target.id]
    )
    expect(copy.length).toBeGreaterThan(900)
    expect(copy).toEqual(source)

    // A segment's members only.
    const segments = (await secret("GET", "/segments")).json
    const pros = (segments.data ?? segments).find((segment: { name: string }) => segment.name === "Imported pros")
    const members =
      await (await fetch(`${api.url}/contacts/export?segmentId=${pros.id}`, { headers: { authorization: `Bearer ${project.secretKey}` } }))
        .text()
    expect(members.trim().split("\n").slice(1).map((line) => line.split(",")[0]).sort()).toEqual(["pro1@example.com", "pro2@example.com"])
    expect((await secret("GET", "/contacts/export?segmentId=00000000-0000-7000-8000-000000000000")).status).toBe(404)
  }, 60_000)
})
