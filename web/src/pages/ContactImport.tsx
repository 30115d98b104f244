/**
 * CSV import: choose a file, see what each column becomes (decided by the server's own rules,
 * src/domain/imports/plan.ts and cells.ts, over the file's first rows read here), change the mapping, start
 * the import (POST /contacts/import through the typed client), then follow its progress, polled from
 * the job until it is done, and its error rows. The job's id stays in the URL, so a reload keeps following it.
 */
import { parse } from "csv-parse/browser/esm/sync"
import { useState } from "react"
import { Link, useSearchParams } from "react-router"
import { MAX_IMPORT_BYTES } from "../../../src/http/api/contactJobs.ts"
import { cellValue, columnName, detectDelimiter, type Delimiter } from "../../../src/domain/imports/cells.ts"
import { headerDataKey, planColumns } from "../../../src/domain/imports/plan.ts"
import { useApiMutation, useProjectId } from "../api/hooks.ts"
import { Card, MutationError } from "../components/Form.tsx"
import { isFinished, JobErrors, JobProgress, useContactJob } from "../components/Job.tsx"
import { valueTypeOf } from "../components/DataEditor.tsx"
import { displayValue } from "../components/words.ts"
import { cell, Page, Table } from "../components/Page.tsx"
import { ErrorState, Loading } from "../components/States.tsx"

/** How much of the file the preview reads: its header and first rows. */
const PREVIEW_BYTES = 64 * 1024
const PREVIEW_ROWS = 5

interface Sample {
  readonly file: File
  readonly delimiter: Delimiter
  readonly header: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
}

type Choice = { readonly mode: "auto" | "email" | "subscribed" | "ignore" } | { readonly mode: "key"; readonly key: string }

const readSample = async (file: File): Promise<Sample | string> => {
  if (file.size > MAX_IMPORT_BYTES) return `The file is ${(file.size / 1024 / 1024).toFixed(1)} MB: at most ${MAX_IMPORT_BYTES / 1024 / 1024} MB per import`
  let text = await file.slice(0, PREVIEW_BYTES).text()
  // Whole records only: cut after the last line break of what was read (unless that is the whole file).
  if (file.size > PREVIEW_BYTES) text = text.slice(0, Math.max(text.lastIndexOf("\n"), 0))
  const delimiter = detectDelimiter(text)
  try {
    const records = parse(text, { bom: true, delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, to: PREVIEW_ROWS + 1 })
    const [header, ...rows] = records
    if (!header) return "The file is empty"
    return { file, delimiter, header, rows }
  } catch (error) {
    return `The file is not readable as CSV: ${error instanceof Error ? error.message : String(error)}`
  }
}

const mappingOf = (header: ReadonlyArray<string>, choices: Readonly<Record<string, Choice>>): Record<string, string> => {
  const mapping: Record<string, string> = {}
  for (const { name } of header.map(columnName)) {
    const choice = choices[name]
    if (!choice || choice.mode === "auto") continue
    mapping[name] = choice.mode === "key" ? choice.key.trim() : choice.mode
  }
  return mapping
}

export function ContactImportPage() {
  const projectId = useProjectId()
  const [params, setParams] = useSearchParams()
  const jobId = params.get("job") ?? undefined
  const [sample, setSample] = useState<Sample | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [reading, setReading] = useState(false)
  const [choices, setChoices] = useState<Readonly<Record<string, Choice>>>({})
  const [defaultSubscribed, setDefaultSubscribed] = useState<"" | "true" | "false">("")

  const start = useApiMutation((client, form: FormData) => client.contactJobs.import({ payload: form }), {
    onSuccess: ({ jobId }) => setParams({ job: jobId })
  })

  const mapping = sample ? mappingOf(sample.header, choices) : {}
  const planned = sample
    ? planColumns(sample.header, sample.delimiter, mapping, defaultSubscribed === "" ? null : defaultSubscribed === "true")
    : null
  const plan = planned && "plan" in planned ? planned.plan : null

  return (
    <Page title="Import contacts">
      <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/contacts`} className="link">All contacts</Link></p>
      {jobId !== undefined
        ? <ImportJob jobId={jobId} onAnother={() => {
          setSample(null)
          setChoices({})
          start.reset()
          setParams({})
        }} />
        : (
          <div className="space-y-6">
            <Card title="1. Choose a CSV file">
              <label className="block text-sm font-medium text-slate-700">
                CSV file
                <input
                  type="file"
                  accept=".csv,.tsv,.txt,text/csv,text/plain"
                  className="mt-1 block w-full text-sm file:mr-3 file:rounded-md file:border-0 file:bg-indigo-50 file:px-3 file:py-2 file:font-medium file:text-indigo-700 hover:file:bg-indigo-100"
                  onChange={async (event) => {
                    const file = event.target.files?.[0]
                    setSample(null)
                    setChoices({})
                    setProblem(null)
                    if (!file) return
                    setReading(true)
                    const read = await readSample(file)
                    setReading(false)
                    if (typeof read === "string") setProblem(read)
                    else setSample(read)
                  }}
                />
              </label>
              <p className="mt-2 text-xs text-slate-500">
                At most 5 MB; comma, semicolon or tab separated; a header row naming the columns: <code>email</code> (or <code>Email Address</code>),{" "}
                <code>subscribed</code> (true/false, yes/no, 1/0), every other column a custom field named by its header in lower case
                {" "}(<code>First Name</code> is <code>first name</code>).
              </p>
              {reading && <Loading label="Reading the file…" />}
              {problem && <p role="alert" className="mt-3 text-sm text-red-700">{problem}</p>}
            </Card>
            {sample && (
              <Card title="2. Check the columns">
                <p className="mb-3 text-sm text-slate-600">
                  The first {sample.rows.length} row{sample.rows.length === 1 ? "" : "s"} of <strong className="break-all">{sample.file.name}</strong>, as they will be imported.
                  Empty cells leave a field unchanged.
                </p>
                <Table label="Column mapping" head={["Column", "Imports as", ...sample.rows.map((_, index) => `Row ${index + 2}`)]}>
                  {sample.header.map((name, index) => {
                    const column = columnName(name).name
                    const choice = choices[column] ?? { mode: "auto" }
                    const role = plan === null
                      ? null
                      : plan.email === index ? "email" : plan.subscribed === index ? "subscribed" : plan.data.find(([at]) => at === index)?.[1]
                    return (
                      <tr key={index}>
                        <td className={`${cell} break-words font-mono`}>{column || <span className="text-slate-400">(no name)</span>}</td>
                        <td className={`${cell} min-w-48`}>
                          <select
                            className="input py-1"
                            aria-label={`Import ${column || `column ${index + 1}`} as`}
                            value={choice.mode}
                            onChange={(event) => {
                              const mode = event.target.value as Choice["mode"]
                              setChoices({ ...choices, [column]: mode === "key" ? { mode, key: headerDataKey(column) } : { mode } })
                            }}
                          >
                            <option value="auto">{column ? "as named" : "ignore (no name)"}</option>
                            <option value="email">email</option>
                            <option value="subscribed">subscribed</option>
                            <option value="key">a custom field…</option>
                            <option value="ignore">ignore</option>
                          </select>
                          {choice.mode === "key" && (
                            <input
                              className="input mt-1 py-1 font-mono"
                              aria-label={`Field name for ${column || `column ${index + 1}`}`}
                              value={choice.key}
                              onChange={(event) => setChoices({ ...choices, [column]: { mode: "key", key: event.target.value } })}
                            />
                          )}
                          {/* The key the column is stored under, as the server names it (`First Name` is `first name`). */}
                          <p className="mt-1 text-xs text-slate-500" data-testid={`role-${column}`}>
                            {role === null
                              ? ""
                              : role === undefined
                              ? "not imported"
                              : role === "email" || role === "subscribed"
                              ? role
                              : <>field <code className="whitespace-pre-wrap rounded bg-slate-100 px-1 text-slate-800">{role}</code></>}
                          </p>
                        </td>
                        {sample.rows.map((row, rowIndex) => {
                          const text = row[index] ?? ""
                          const value = role && role !== "email" && role !== "subscribed" && text !== "" ? cellValue(text) : undefined
                          return (
                            <td key={rowIndex} className={`${cell} max-w-56 break-words font-mono text-xs ${role === undefined ? "text-slate-400" : ""}`}>
                              {value === undefined ? text : <>{displayValue(value)} <span className="whitespace-nowrap text-slate-500">({valueTypeOf(value)})</span></>}
                            </td>
                          )
                        })}
                      </tr>
                    )
                  })}
                </Table>
                <label className="mt-4 block max-w-md text-sm font-medium text-slate-700">
                  Rows without a subscription
                  <select className="input mt-1" value={defaultSubscribed} onChange={(event) => setDefaultSubscribed(event.target.value as typeof defaultSubscribed)}>
                    <option value="">new contacts subscribed, existing ones unchanged</option>
                    <option value="true">subscribed</option>
                    <option value="false">unsubscribed</option>
                  </select>
                </label>
                {planned && "message" in planned && <p role="alert" className="mt-3 text-sm text-red-700">This file cannot be imported: {planned.message}.</p>}
                {planned && "reserved" in planned && planned.reserved.length > 0 && (
                  <p className="mt-3 text-sm text-amber-800">Reserved field names are not imported: {planned.reserved.join(", ")}.</p>
                )}
                <button
                  type="button"
                  className="btn-primary mt-5"
                  disabled={plan === null || start.isPending}
                  onClick={() => {
                    const form = new FormData()
                    form.append("file", sample.file, sample.file.name)
                    if (defaultSubscribed !== "") form.append("subscribed", defaultSubscribed)
                    if (Object.keys(mapping).length > 0) form.append("mapping", JSON.stringify(mapping))
                    start.mutate(form)
                  }}
                >
                  {start.isPending ? "Uploading…" : "Start import"}
                </button>
                <MutationError error={start.error} />
              </Card>
            )}
          </div>
        )}
    </Page>
  )
}

function ImportJob({ jobId, onAnother }: { readonly jobId: string; readonly onAnother: () => void }) {
  const projectId = useProjectId()
  const job = useContactJob("import", jobId)
  if (job.isPending) return <Loading />
  if (job.isError) return <ErrorState failure={job.error} onRetry={() => void job.refetch()} />
  const finished = isFinished(job.data)
  return (
    <div className="space-y-6">
      <Card title="Import progress">
        <JobProgress job={job.data} label="Import progress" />
        {finished && (
          <div className="mt-4 flex flex-wrap gap-2">
            <Link to={`/p/${projectId}/contacts`} className="btn-primary">View contacts</Link>
            <button type="button" className="btn-secondary" onClick={onAnother}>Import another file</button>
          </div>
        )}
      </Card>
      {finished && job.data.errors.length > 0 && (
        <section aria-label="Rows not imported">
          <h2 className="mb-3 text-lg font-semibold text-slate-800">Rows not imported</h2>
          <JobErrors job={job.data} />
        </section>
      )}
    </div>
  )
}
