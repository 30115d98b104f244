import { Link } from "react-router"
import { Page } from "../components/Page.tsx"

export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <p className="text-slate-700">There is no page at this address.</p>
      <p className="mt-3"><Link to="/p" className="link">Go to your projects</Link></p>
    </Page>
  )
}
