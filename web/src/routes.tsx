/**
 * The app's routes. Everything lives under the roots in src/http/api/dashboard.ts (the server answers
 * the app's page there and nowhere else); a path under a root that matches nothing shows NotFoundPage.
 */
import { createBrowserRouter, Navigate } from "react-router"
import { RouteError } from "./components/ErrorBoundary.tsx"
import { PlainLayout, ProjectLayout } from "./components/Layout.tsx"
import { CampaignPage, CampaignsPage } from "./pages/Campaigns.tsx"
import { ContactPage } from "./pages/Contact.tsx"
import { ContactsPage } from "./pages/Contacts.tsx"
import { DomainsPage } from "./pages/Domains.tsx"
import { EventsPage } from "./pages/Events.tsx"
import { HomePage } from "./pages/Home.tsx"
import { NotFoundPage } from "./pages/NotFound.tsx"
import { accountPages, Placeholder } from "./pages/Placeholder.tsx"
import { ProjectsPage } from "./pages/Projects.tsx"
import { SegmentPage, SegmentsPage } from "./pages/Segments.tsx"
import { TemplatePage, TemplatesPage } from "./pages/Templates.tsx"
import { WorkflowPage, WorkflowsPage } from "./pages/Workflows.tsx"
import type { DashboardRoot } from "../../src/http/api/dashboard.ts"

/** Each account page's root, typed against the shared list so a renamed root breaks this file. */
const account: ReadonlyArray<readonly [DashboardRoot, keyof typeof accountPages]> = [
  ["/signin", "signin"],
  ["/signup", "signup"],
  ["/verify-email", "verifyEmail"],
  ["/forgot-password", "forgotPassword"],
  ["/reset-password", "resetPassword"],
  ["/accept-invitation", "acceptInvitation"]
]

export const router = createBrowserRouter([
  { path: "/", element: <Navigate to="/p" replace /> },
  {
    element: <PlainLayout />,
    errorElement: <RouteError />,
    children: [
      { path: "/p", element: <ProjectsPage /> },
      ...account.map(([path, page]) => ({ path, element: <Placeholder {...accountPages[page]} /> })),
      { path: "*", element: <NotFoundPage /> }
    ]
  },
  {
    path: "/p/:projectId",
    element: <ProjectLayout />,
    errorElement: <RouteError />,
    children: [
      { index: true, element: <HomePage /> },
      { path: "contacts", element: <ContactsPage /> },
      { path: "contacts/:contactId", element: <ContactPage /> },
      { path: "templates", element: <TemplatesPage /> },
      { path: "templates/:templateId", element: <TemplatePage /> },
      { path: "segments", element: <SegmentsPage /> },
      { path: "segments/:segmentId", element: <SegmentPage /> },
      { path: "campaigns", element: <CampaignsPage /> },
      { path: "campaigns/:campaignId", element: <CampaignPage /> },
      { path: "workflows", element: <WorkflowsPage /> },
      { path: "workflows/:workflowId", element: <WorkflowPage /> },
      { path: "events", element: <EventsPage /> },
      { path: "domains", element: <DomainsPage /> },
      { path: "settings", element: <Placeholder {...accountPages.settings} /> },
      { path: "*", element: <NotFoundPage /> }
    ]
  }
])
