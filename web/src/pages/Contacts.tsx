/** Contacts: a cursor-paged table with search and a subscription filter (both kept in the URL). */
import { useEffect, useState } from "react"
import { Link, useSearchParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { Badge, cell, formatDate, Page, Table, wideOnly } from "../components/Page.tsx"
import { Pager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"

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

export function ContactsPage() {
  const projectId = useProjectId()
  const [params, setParams] = useSearchParams()
  const subscribed = params.get("subscribed") ?? ""
  const [searchText, setSearchText] = useState(params.get("search") ?? "")
  const search = useDebounced(searchText.trim(), 300)
  // Cursors of the pages before the current one: "Previous" pops, "Next" pushes.
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const [cursor, setCursor] = useState<string | undefined>(undefined)

  useEffect(() => {
    setCursors([])
    setCursor(undefined)
  }, [search, subscribed])
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
    ["contacts", "list", { search, subscribed, cursor }],
    (client) =>
      client.contacts.list({
        query: {
          limit: String(PAGE_SIZE),
          ...(search ? { search } : {}),
          ...(subscribed ? { subscribed } : {}),
          ...(cursor ? { cursor } : {})
        }
      })
  )
  const [total, setTotal] = useState<number | null>(null)
  // The total comes with the first page only; keep it while paging.
  useEffect(() => {
    if (query.data && cursor === undefined) setTotal(query.data.total)
  }, [query.data, cursor])

  return (
    <Page title="Contacts">
      <div className="mb-4 flex flex-col gap-3 sm:flex-row sm:items-end">
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
          <select
            id="contact-filter"
            className="input"
            value={subscribed}
            onChange={(event) =>
              setParams((current) => {
                const next = new URLSearchParams(current)
                if (event.target.value) next.set("subscribed", event.target.value)
                else next.delete("subscribed")
                return next
              })}
          >
            {FILTERS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
          </select>
        </div>
      </div>
      <QueryView
        query={query}
        isEmpty={(page) => page.data.length === 0 && cursor === undefined}
        empty={
          <Empty title={search || subscribed ? "No contact matches" : "No contacts yet"}>
            {search || subscribed ? "Try another search or filter." : <>Contacts appear when you add them with <code>POST /contacts</code> or track their events.</>}
          </Empty>
        }
      >
        {(page) => (
          <>
            {total !== null && <p className="mb-2 text-sm text-slate-600" data-testid="contact-total">{total.toLocaleString()} contacts</p>}
            <Table label="Contacts" head={["Email", "Subscription", ["Data", wideOnly], ["Created", wideOnly]]}>
              {page.data.map((contact) => (
                <tr key={contact.id} className="hover:bg-slate-50">
                  <td className={cell}>
                    <Link to={`/p/${projectId}/contacts/${contact.id}`} className="link break-words">{contact.email}</Link>
                  </td>
                  <td className={cell}>{contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>}</td>
                  <td className={`${cell} ${wideOnly} text-slate-600`}>{Object.keys(contact.data).length} fields</td>
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
        )}
      </QueryView>
    </Page>
  )
}
