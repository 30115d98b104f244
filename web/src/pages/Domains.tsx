/** Sending domains: add one, publish the DNS records it lists (one click copies each), check them now, delete one. */
import { type FormEvent, useState } from "react"
import type { Domain } from "../../../src/http/api/domains.ts"
import { fieldError } from "../api/fieldErrors.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { CopyButton } from "../components/CopyButton.tsx"
import { changeClearing, FieldMessage, MutationError } from "../components/Form.tsx"
import { DomainsDeliveryNote } from "../components/Delivery.tsx"
import { Badge, cell, formatDate, Page, Table } from "../components/Page.tsx"
import { Empty, ErrorState, QueryView } from "../components/States.tsx"
import { RequiresRole } from "./settings/Settings.tsx"

type Status = DomainView["status"] | DomainView["records"][number]["status"]
const tone = (status: Status) =>
  status === "VERIFIED" ? "green" : status === "FAILED" || status === "MISMATCH" ? "red" : status === "PENDING" || status === "MISSING" ? "amber" : "slate"

export function DomainsPage() {
  // The navigation offers this page to admins and owners only; a MEMBER following a link is told why.
  return <Page title="Domains"><RequiresRole permission="manage"><Domains /></RequiresRole></Page>
}

function Domains() {
  const projectId = useProjectId() ?? ""
  const domains = useApiQuery(["domains", "list"], (client) => client.domains.list({ params: { projectId } }), { refetchInterval: 30_000 })
  return (
    <>
      <DomainsDeliveryNote />
      <AddDomain />
      <QueryView
        query={domains}
        isEmpty={(list) => list.length === 0}
        empty={<Empty title="No sending domains yet">Add the domain you send from; then publish the records it lists.</Empty>}
      >
        {(list) => <div className="space-y-6">{list.map((domain) => <DomainCard key={domain.id} domain={domain} />)}</div>}
      </QueryView>
    </>
  )
}

function AddDomain() {
  const [domain, setDomain] = useState("")
  const add = useApiMutation((client, name: string) => client.domains.create({ payload: { domain: name } }), {
    invalidates: [["domains"]],
    onSuccess: () => setDomain("")
  })
  const error = fieldError(add.error, "domain")
  const submit = (event: FormEvent) => {
    event.preventDefault()
    if (domain.trim()) add.mutate(domain.trim())
  }
  return (
    <form onSubmit={submit} className="mb-8 rounded-lg border border-slate-200 bg-white p-5">
      <label htmlFor="new-domain" className="block text-sm font-medium text-slate-700">Add a domain</label>
      <div className="mt-2 flex flex-col gap-2 sm:flex-row">
        <input
          id="new-domain"
          className={`input ${error ? "border-red-500" : ""}`}
          value={domain}
          onChange={changeClearing(add, setDomain)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "new-domain-error" : undefined}
          placeholder="mail.example.com"
          autoComplete="off"
          spellCheck={false}
        />
        <button type="submit" className="btn-primary" disabled={add.isPending || domain.trim() === ""}>
          {add.isPending ? "Adding…" : "Add domain"}
        </button>
      </div>
      <FieldMessage id="new-domain-error" message={error} />
      <MutationError error={add.error} fields={["domain"]} />
    </form>
  )
}

type DomainView = typeof Domain.Type

function DomainCard({ domain }: { readonly domain: DomainView }) {
  const check = useApiMutation((client, id: string) => client.domains.verify({ params: { id } }), { invalidates: [["domains"]] })
  const [deleting, setDeleting] = useState(false)
  const remove = useApiMutation((client, id: string) => client.domains.delete({ params: { id } }), {
    invalidates: [["domains"]],
    onSuccess: () => setDeleting(false)
  })
  return (
    <article aria-label={domain.domain} className="rounded-lg border border-slate-200 bg-white">
      <header className="flex flex-wrap items-center justify-between gap-3 border-b border-slate-200 px-5 py-4">
        <div>
          <h2 className="break-all text-lg font-semibold">{domain.domain}</h2>
          <p className="text-sm text-slate-500">Last checked {formatDate(domain.lastCheckedAt)}</p>
        </div>
        <div className="flex items-center gap-3">
          <Badge tone={tone(domain.status)}>{domain.status.toLowerCase()}</Badge>
          <button type="button" className="btn-secondary" disabled={check.isPending} onClick={() => check.mutate(domain.id)}>
            {check.isPending ? "Checking…" : "Check now"}
          </button>
          <button type="button" className="btn-danger" onClick={() => setDeleting(true)}>Delete</button>
        </div>
      </header>
      <div className="p-5">
        {check.isError && <div className="mb-4"><ErrorState failure={check.error} /></div>}
        {remove.isError && <div className="mb-4"><ErrorState failure={remove.error} /></div>}
        <Table label={`DNS records of ${domain.domain}`} head={["Record", "Type", "Name", "Value", "Status"]}>
          {domain.records.map((record) => (
            <tr key={record.purpose}>
              <td className={`${cell} whitespace-nowrap`}>
                {record.purpose}
                {!record.required && <span className="block text-xs text-slate-500">recommended</span>}
              </td>
              <td className={`${cell} font-mono`}>{record.type}</td>
              <td className={cell}>
                <div className="flex items-start gap-2">
                  <code className="min-w-0 break-all font-mono text-xs">{record.name}</code>
                  <CopyButton value={record.name} label={`${record.purpose} name`} />
                </div>
              </td>
              <td className={cell}>
                <div className="flex items-start gap-2">
                  <code className="line-clamp-3 min-w-0 max-w-md break-all font-mono text-xs" title={record.value}>{record.value}</code>
                  <CopyButton value={record.value} label={`${record.purpose} value`} />
                </div>
              </td>
              <td className={cell}><Badge tone={tone(record.status)}>{record.status.toLowerCase()}</Badge></td>
            </tr>
          ))}
        </Table>
      </div>
      <Confirm
        open={deleting}
        title={`Delete ${domain.domain}?`}
        action="Delete domain"
        typed={domain.domain}
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate(domain.id)}
        onCancel={() => setDeleting(false)}
      >
        Mail from addresses at {domain.domain} can no longer be sent, and its DKIM key is gone: adding the domain again makes a new key, to publish anew.
      </Confirm>
    </article>
  )
}
