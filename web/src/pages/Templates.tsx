/** Templates: a page-numbered list with a type filter (the editor is TemplateEditor.tsx). */
import { useState } from "react"
import { Link } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { Badge, cell, formatDate, Page, Table } from "../components/Page.tsx"
import { NumberedPager } from "../components/Pager.tsx"
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
    <Page title="Templates" actions={<Link to={`/p/${projectId}/templates/new`} className="btn-primary">New template</Link>}>
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
        empty={<Empty title="No templates yet">Create one with New template.</Empty>}
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
            <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
          </>
        )}
      </QueryView>
    </Page>
  )
}
