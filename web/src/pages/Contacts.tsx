/**
 * Contacts: a cursor-paged table with search and filters by subscription, segment and custom field (its
 * presence or value), all kept in the URL; columns
 * for custom fields, a selection for bulk subscribe / unsubscribe / delete (a job, polled until done),
 * creating a contact, CSV export, and the way to the CSV import.
 */
import { useQueryClient } from "@tanstack/react-query"
import { lazy, Suspense, useEffect, useState } from "react"
import { Link, useSearchParams } from "react-router"
import { projectKey, useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { Card, MutationError } from "../components/Form.tsx"
import { isFinished, JobErrors, JobProgress, useContactJob } from "../components/Job.tsx"
import { countOf, displayValue } from "../components/words.ts"
import { Badge, cell, formatDate, Page, Table, wideOnly } from "../components/Page.tsx"
import { Pager } from "../components/Pager.tsx"
import { saveFile } from "../components/saveFile.ts"
import { Empty, Loading, QueryView } from "../components/States.tsx"

// The form (with the typed custom-data rows) comes when asked for: the contacts list is in the first load.
const AddContact = lazy(() => import("./contacts/AddContact.tsx"))

const PAGE_SIZE = 25
const FILTERS = [["", "All contacts"], ["true", "Subscribed"], ["false", "Unsubscribed"]] as const

/** The search box's text, passed on after the typing pauses. */
const useDebounced = (value: string, ms: number) => {
  const [debounced, setDebounced] = useState(value)
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return debounced
}

const DEFAULT_COLUMNS = 3
type BulkAction = "subscribe" | "unsubscribe" | "delete"
const BULK_LABELS: Record<BulkAction, string> = { subscribe: "Subscribe", unsubscribe: "Unsubscribe", delete: "Delete" }

export function ContactsPage() {
  const projectId = useProjectId()
  const [params, setParams] = useSearchParams()
  const subscribed = params.get("subscribed") ?? ""
  const segment = params.get("segment") ?? ""
  const field = params.get("field") ?? ""
  const [valueText, setValueText] = useState(params.get("value") ?? "")
  const value = useDebounced(field ? valueText.trim() : "", 300)
  const setParam = (name: string, text: string) =>
    setParams((current) => {
      const next = new URLSearchParams(current)
      if (text) next.set(name, text)
      else next.delete(name)
      return next
    }, { replace: true })
  const [searchText, setSearchText] = useState(params.get("search") ?? "")
  const search = useDebounced(searchText.trim(), 300)
  const filtered = search !== "" || subscribed !== "" || segment !== "" || field !== ""
  // Cursors of the pages before the current one: "Previous" pops, "Next" pushes.
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const [adding, setAdding] = useState(false)

  useEffect(() => {
    setCursors([])
    setCursor(undefined)
  }, [search, subscribed, segment, field, value])
  // A selection belongs to the rows on screen.
  useEffect(() => setSelected(new Set()), [search, subscribed, segment, field, value, cursor])
  useEffect(() => {
    if ((params.get("value") ?? "") !== value) setParam("value", value)
  }, [value]) // eslint-disable-line react-hooks/exhaustive-deps
  // The search goes into the URL (replacing the entry, not adding one per pause in typing).
  useEffect(() => {
    if ((params.get("search") ?? "") === search) return
    setParams((current) => {
      const next = new URLSearchParams(current)
      if (search) next.set("search", search)
      else next.delete("search")
      return next
    }, { replace: true })
  }, [search]) // eslint-disable-line react-hooks/exhaustive-deps

  const query = useApiQuery(
    ["contacts", "list", { search, subscribed, segment, field, value, cursor }],
    (client) =>
      client.contacts.list({
        query: {
          limit: String(PAGE_SIZE),
          ...(search ? { search } : {}),
          ...(subscribed ? { subscribed } : {}),
          ...(segment ? { segment } : {}),
          ...(field ? { field, ...(value ? { value } : {}) } : {}),
          ...(cursor ? { cursor } : {})
        }
      })
  )
  const [total, setTotal] = useState<number | null>(null)
  // The total comes with the first page only; keep it while paging.
  useEffect(() => {
    if (query.data && cursor === undefined) setTotal(query.data.total)
  }, [query.data, cursor])

  // Custom-field columns: asked for once the rows are there (the rows come first).
  const fields = useApiQuery(["contacts", "fields"], (client) => client.contacts.fields(), { enabled: query.isSuccess })
  const allCustom = (fields.data?.fields ?? []).filter((one) => one.isCustom).map((one) => one.field.slice(5))
  const custom = (fields.data?.fields ?? [])
    .filter((one) => one.isCustom && !one.field.slice(5).includes("."))
    .toSorted((a, b) => b.coverage - a.coverage || a.field.localeCompare(b.field))
    .map((one) => one.field.slice(5))
  const segments = useApiQuery(["segments", "list"], (client) => client.segments.list({}), { enabled: query.isSuccess || query.isError })
  const [chosenColumns, setChosenColumns] = useState<ReadonlyArray<string> | null>(null)
  const columns = chosenColumns ?? custom.slice(0, DEFAULT_COLUMNS)

  return (
    <Page
      title="Contacts"
      actions={
        <>
          <button type="button" className="btn-primary" onClick={() => setAdding(!adding)} aria-expanded={adding}>Add contact</button>
          <Link to={`/p/${projectId}/contacts/import`} className="btn-secondary">Import CSV</Link>
          <ExportButton />
        </>
      }
    >
      {adding && <Suspense fallback={<Loading />}><AddContact onClose={() => setAdding(false)} /></Suspense>}
      <div className="mb-4 flex flex-col gap-3 sm:flex-row sm:flex-wrap sm:items-end">
        <div className="flex-1">
          <label htmlFor="contact-search" className="mb-1 block text-sm font-medium text-slate-700">Search by email</label>
          <input
            id="contact-search"
            type="search"
            className="input"
            value={searchText}
            onChange={(event) => setSearchText(event.target.value)}
            placeholder="name@example.com"
          />
        </div>
        <div>
          <label htmlFor="contact-filter" className="mb-1 block text-sm font-medium text-slate-700">Subscription</label>
          <select id="contact-filter" className="input" value={subscribed} onChange={(event) => setParam("subscribed", event.target.value)}>
            {FILTERS.map(([option, label]) => <option key={option} value={option}>{label}</option>)}
          </select>
        </div>
        <div>
          <label htmlFor="contact-segment" className="mb-1 block text-sm font-medium text-slate-700">Segment</label>
          <select id="contact-segment" className="input" value={segment} onChange={(event) => setParam("segment", event.target.value)}>
            <option value="">Any segment</option>
            {(segments.data ?? []).map((option) => <option key={option.id} value={option.id}>{option.name}</option>)}
          </select>
        </div>
        <div>
          <label htmlFor="contact-field" className="mb-1 block text-sm font-medium text-slate-700">Custom field</label>
          <select
            id="contact-field"
            className="input"
            value={field}
            onChange={(event) => {
              if (!event.target.value) setValueText("")
              setParam("field", event.target.value)
            }}
          >
            <option value="">Any data</option>
            {allCustom.map((name) => <option key={name} value={`data.${name}`}>{name}</option>)}
            {field && !allCustom.includes(field.slice(5)) && <option value={field}>{field.slice(5)}</option>}
          </select>
        </div>
        {field && (
          <div>
            <label htmlFor="contact-value" className="mb-1 block text-sm font-medium text-slate-700">Value of {field.slice(5)}</label>
            <input id="contact-value" className="input" value={valueText} onChange={(event) => setValueText(event.target.value)} placeholder="any value" />
          </div>
        )}
        {custom.length > 0 && (
          <details className="relative">
            <summary className="btn-secondary cursor-pointer list-none">Columns</summary>
            <fieldset className="absolute right-0 z-10 mt-1 max-h-72 w-64 max-w-[calc(100vw-2rem)] overflow-auto rounded-lg border border-slate-200 bg-white p-3 shadow-lg">
              <legend className="sr-only">Custom-field columns</legend>
              {custom.map((field) => (
                <label key={field} className="flex items-center gap-2 py-1 text-sm">
                  <input
                    type="checkbox"
                    checked={columns.includes(field)}
                    onChange={(event) =>
                      setChosenColumns(event.target.checked ? [...columns, field] : columns.filter((column) => column !== field))}
                  />
                  <span className="break-all font-mono">{field}</span>
                </label>
              ))}
            </fieldset>
          </details>
        )}
      </div>
      <BulkBar selected={selected} onDone={() => setSelected(new Set())} />
      <QueryView
        query={query}
        isEmpty={(page) => page.data.length === 0 && cursor === undefined}
        empty={
          <Empty title={filtered ? "No contact matches" : "No contacts yet"}>
            {filtered
              ? "Try another search or filter."
              : <>Add one above, import a CSV file, or create them with <code>POST /contacts</code> or by tracking their events.</>}
          </Empty>
        }
      >
        {(page) => {
          const allSelected = page.data.length > 0 && page.data.every((contact) => selected.has(contact.id))
          return (
            <>
              {total !== null && <p className="mb-2 text-sm text-slate-600" data-testid="contact-total">{countOf(total, "contact")}</p>}
              <Table
                label="Contacts"
                head={[
                  [
                    <input
                      type="checkbox"
                      aria-label="Select every contact on this page"
                      checked={allSelected}
                      onChange={() => setSelected(allSelected ? new Set() : new Set(page.data.map((contact) => contact.id)))}
                    />,
                    "w-8"
                  ],
                  "Email",
                  "Subscription",
                  ...columns.map((column) => [<span className="font-mono">{column}</span>, wideOnly] as const),
                  ["Created", wideOnly]
                ]}
              >
                {page.data.map((contact) => (
                  <tr key={contact.id} className={selected.has(contact.id) ? "bg-indigo-50" : "hover:bg-slate-50"}>
                    <td className={cell}>
                      <input
                        type="checkbox"
                        aria-label={`Select ${contact.email}`}
                        checked={selected.has(contact.id)}
                        onChange={(event) => {
                          const next = new Set(selected)
                          if (event.target.checked) next.add(contact.id)
                          else next.delete(contact.id)
                          setSelected(next)
                        }}
                      />
                    </td>
                    <td className={cell}>
                      <Link to={`/p/${projectId}/contacts/${contact.id}`} className="link break-words">{contact.email}</Link>
                    </td>
                    <td className={cell}>{contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>}</td>
                    {columns.map((column) => (
                      <td key={column} className={`${cell} ${wideOnly} max-w-48 truncate font-mono text-xs text-slate-700`}>
                        {Object.hasOwn(contact.data, column) ? displayValue(contact.data[column]) : <span className="text-slate-400">—</span>}
                      </td>
                    ))}
                    <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(contact.createdAt)}</td>
                  </tr>
                ))}
              </Table>
              <Pager
                label={`Page ${cursors.length + 1}`}
                hasPrevious={cursor !== undefined}
                hasNext={page.hasMore && page.cursor !== null}
                onPrevious={() => {
                  setCursor(cursors.at(-1) === "" ? undefined : cursors.at(-1))
                  setCursors(cursors.slice(0, -1))
                }}
                onNext={() => {
                  setCursors([...cursors, cursor ?? ""])
                  setCursor(page.cursor ?? undefined)
                }}
              />
            </>
          )
        }}
      </QueryView>
    </Page>
  )
}

/** Bulk subscribe / unsubscribe / delete of the selected contacts: one job, followed until it is done. */
function BulkBar({ selected, onDone }: { readonly selected: ReadonlySet<string>; readonly onDone: () => void }) {
  const projectId = useProjectId()
  const queryClient = useQueryClient()
  const [confirmDelete, setConfirmDelete] = useState(false)
  const [jobId, setJobId] = useState<string | undefined>(undefined)
  const start = useApiMutation((client, action: BulkAction) => {
    const payload = { contactIds: [...selected] }
    return action === "subscribe"
      ? client.contactJobs.bulkSubscribe({ payload })
      : action === "unsubscribe"
      ? client.contactJobs.bulkUnsubscribe({ payload })
      : client.contactJobs.bulkDelete({ payload })
  }, {
    onSuccess: ({ jobId }) => {
      setConfirmDelete(false)
      setJobId(jobId)
    }
  })
  const job = useContactJob("bulk", jobId)
  const finished = isFinished(job.data)
  useEffect(() => {
    if (!finished) return
    onDone()
    void queryClient.invalidateQueries({ queryKey: projectKey(projectId, ["contacts"]) })
  }, [finished]) // eslint-disable-line react-hooks/exhaustive-deps

  if (selected.size === 0 && jobId === undefined) return null
  return (
    <div className="mb-4 space-y-3">
      {selected.size > 0 && (
        <div role="region" aria-label="Bulk actions" className="flex flex-wrap items-center gap-2 rounded-lg border border-indigo-200 bg-indigo-50 px-4 py-3">
          <span className="mr-auto text-sm font-medium text-indigo-900">{selected.size} selected</span>
          <button type="button" className="btn-secondary" disabled={start.isPending} onClick={() => start.mutate("subscribe")}>{BULK_LABELS.subscribe}</button>
          <button type="button" className="btn-secondary" disabled={start.isPending} onClick={() => start.mutate("unsubscribe")}>{BULK_LABELS.unsubscribe}</button>
          <button type="button" className="btn-danger" disabled={start.isPending} onClick={() => setConfirmDelete(true)}>{BULK_LABELS.delete}</button>
        </div>
      )}
      {!confirmDelete && <MutationError error={start.error} />}
      {jobId !== undefined && (
        <Card title={`Bulk ${job.data?.type ?? "action"}`}>
          {job.data ? <JobProgress job={job.data} label="Bulk action progress" /> : job.isError ? <MutationError error={job.error} /> : <p className="text-sm text-slate-600">Starting…</p>}
          {job.data && finished && <div className="mt-3"><JobErrors job={job.data} /></div>}
          {finished && <button type="button" className="btn-secondary mt-3" onClick={() => setJobId(undefined)}>Dismiss</button>}
        </Card>
      )}
      <Confirm
        open={confirmDelete}
        title={`Delete ${selected.size} contact${selected.size === 1 ? "" : "s"}?`}
        action="Delete"
        danger
        busy={start.isPending}
        onConfirm={() => start.mutate("delete")}
        onCancel={() => setConfirmDelete(false)}
      >
        They leave their segments and their running workflow executions are cancelled. This cannot be undone.
        <MutationError error={start.error} />
      </Confirm>
    </div>
  )
}

/** Every contact as CSV (GET /contacts/export through the typed client), saved as a file. */
function ExportButton() {
  const download = useApiMutation((client, _: void) => client.contactJobs.export({ query: {} }), {
    onSuccess: (csv) => saveFile(csv, "text/csv", `contacts-${new Date().toISOString().slice(0, 10)}.csv`)
  })
  return (
    <>
      <button type="button" className="btn-secondary" disabled={download.isPending} onClick={() => download.mutate()}>
        {download.isPending ? "Exporting…" : "Export CSV"}
      </button>
      {download.error && <div className="basis-full"><MutationError error={download.error} /></div>}
    </>
  )
}
