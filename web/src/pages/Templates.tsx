/** Templates: a page-numbered list with a type filter, and one template read-only (editing comes with the editor). */
import { useState } from "react"
import { Link, useParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { Badge, cell, Fields, formatDate, Page, Section, Table } from "../components/Page.tsx"
import { Pager, pageLabel } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"

const TYPES = ["", "TRANSACTIONAL", "MARKETING", "HEADLESS"] as const

export function TemplatesPage() {
  const projectId = useProjectId()
  const [page, setPage] = useState(1)
  const [type, setType] = useState<typeof TYPES[number]>("")
  const query = useApiQuery(
    ["templates", "list", { page, type }],
    (client) => client.templates.list({ query: { page: String(page), pageSize: "20", sort: "updatedAt", ...(type ? { type } : {}) } })
  )
  return (
    <Page title="Templates">
      <div className="mb-4 max-w-xs">
        <label htmlFor="template-type" className="mb-1 block text-sm font-medium text-slate-700">Type</label>
        <select
          id="template-type"
          className="input"
          value={type}
          onChange={(event) => {
            setType(event.target.value as typeof TYPES[number])
            setPage(1)
          }}
        >
          {TYPES.map((value) => <option key={value} value={value}>{value ? value.toLowerCase() : "All types"}</option>)}
        </select>
      </div>
      <QueryView
        query={query}
        isEmpty={(result) => result.total === 0}
        empty={<Empty title="No templates yet">Create one with <code>POST /templates</code>.</Empty>}
      >
        {(result) => (
          <>
            <Table label="Templates" head={["Name", "Type", "Subject", "Updated"]}>
              {result.data.map((template) => (
                <tr key={template.id} className="hover:bg-slate-50">
                  <td className={cell}><Link to={`/p/${projectId}/templates/${template.id}`} className="link">{template.name}</Link></td>
                  <td className={cell}><Badge tone="indigo">{template.type.toLowerCase()}</Badge></td>
                  <td className={`${cell} text-slate-700`}>{template.subject}</td>
                  <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(template.updatedAt)}</td>
                </tr>
              ))}
            </Table>
            <Pager
              label={pageLabel(result.page, result.totalPages)}
              hasPrevious={page > 1}
              hasNext={page < result.totalPages}
              onPrevious={() => setPage(page - 1)}
              onNext={() => setPage(page + 1)}
            />
          </>
        )}
      </QueryView>
    </Page>
  )
}

export function TemplatePage() {
  const { templateId = "" } = useParams()
  const projectId = useProjectId()
  const query = useApiQuery(["templates", "get", templateId], (client) => client.templates.get({ params: { id: templateId } }))
  return (
    <QueryView query={query}>
      {(template) => (
        <Page title={template.name}>
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/templates`} className="link">All templates</Link></p>
          <Section title="Template">
            <Fields
              items={[
                ["Type", <Badge tone="indigo">{template.type.toLowerCase()}</Badge>],
                ["Subject", template.subject],
                ["From", template.fromName ? `${template.fromName} <${template.from}>` : template.from],
                ["Reply to", template.replyTo ?? "—"],
                ["Description", template.description ?? "—"],
                ["Updated", formatDate(template.updatedAt)]
              ]}
            />
          </Section>
          <Section title="Body">
            <pre className="max-h-[32rem] overflow-auto whitespace-pre-wrap break-words rounded-lg border border-slate-200 bg-white p-4 font-mono text-xs text-slate-800">
              {template.body}
            </pre>
          </Section>
        </Page>
      )}
    </QueryView>
  )
}
