/**
 * Contact jobs over HTTP: a CSV file posted to /contacts/import as the dashboard posts it, and a job
 * (import, bulk change or deletion) read until it has completed.
 */
import { expect } from "vitest"
import { eventually } from "./nats.ts"
import { readResponse, request } from "./stack.ts"

/** POST /contacts/import with a file (text or bytes) and form fields: the answer (202 and a jobId when accepted). */
export const uploadContacts = async (base: string, key: string, file: string | Uint8Array, fields: Record<string, string> = {}) => {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.append(name, value)
  form.append("file", new Blob([file as BlobPart], { type: "text/csv" }), "contacts.csv")
  return readResponse(await fetch(`${base}/contacts/import`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form }))
}

/** The job `/contacts/<kind>/<jobId>` once it has COMPLETED (it fails the test after `timeoutMs`). */
export const jobCompleted = (base: string, key: string, jobId: string, kind = "import", timeoutMs = 30_000) =>
  eventually(async () => {
    const job = await request(base, "GET", `/contacts/${kind}/${jobId}`, { key })
    expect(job.status).toBe(200)
    expect(job.json.status).toBe("COMPLETED")
    return job.json
  }, timeoutMs)
