/**
 * The app's routes. Everything lives under the roots in src/http/api/dashboard.ts (the server answers
 * the app's page there and nowhere else); a path under a root that matches nothing shows NotFoundPage.
 */
import { createBrowserRouter, Navigate } from "react-router"
import { RouteError } from "./components/ErrorBoundary.tsx"
import { PlainLayout, ProjectLayout } from "./components/Layout.tsx"
import { ContactsPage } from "./pages/Contacts.tsx"
import { HomePage } from "./pages/Home.tsx"
import { NotFoundPage } from "./pages/NotFound.tsx"
import { AcceptInvitationPage } from "./pages/account/Invitation.tsx"
import { SignInPage, SignUpPage } from "./pages/account/SignIn.tsx"
import { ForgotPasswordPage, ResetPasswordPage, VerifyEmailPage } from "./pages/account/Tokens.tsx"
import { SettingsLayout } from "./pages/settings/Settings.tsx"
import type { DashboardRoot } from "../../src/http/api/dashboard.ts"

/** Each account page's root, typed against the shared list so a renamed root breaks this file. */
const account: ReadonlyArray<readonly [DashboardRoot, () => React.ReactNode]> = [
  ["/signin", SignInPage],
  ["/signup", SignUpPage],
  ["/verify-email", VerifyEmailPage],
  ["/forgot-password", ForgotPasswordPage],
  ["/reset-password", ResetPasswordPage],
  ["/accept-invitation", AcceptInvitationPage]
]

/**
 * A page loaded on demand, in a chunk of its own: the first load carries the shell, the home page, the
 * contacts list and the account pages only (the project list and settings pages come on demand too)
 * (test/http/dashboard.test.ts holds it to a size budget).
 */
const page = <M,>(load: () => Promise<M>, pick: (module: M) => React.ComponentType) => ({
  lazy: () => load().then((module) => ({ Component: pick(module) }))
})

export const router = createBrowserRouter([
  { path: "/", element: <Navigate to="/p" replace /> },
  {
    element: <PlainLayout />,
    errorElement: <RouteError />,
    children: [
      { path: "/p", ...page(() => import("./pages/Projects.tsx"), (module) => module.ProjectsPage) },
      ...account.map(([path, AccountPage]) => ({ path, element: <AccountPage /> })),
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
      { path: "contacts/import", ...page(() => import("./pages/ContactImport.tsx"), (module) => module.ContactImportPage) },
      { path: "contacts/:contactId", ...page(() => import("./pages/Contact.tsx"), (module) => module.ContactPage) },
      { path: "templates", ...page(() => import("./pages/Templates.tsx"), (module) => module.TemplatesPage) },
      // The editor brings CodeMirror (most of the app's weight).
      { path: "templates/new", ...page(() => import("./pages/TemplateEditor.tsx"), (module) => module.NewTemplatePage) },
      { path: "templates/:templateId", ...page(() => import("./pages/TemplateEditor.tsx"), (module) => module.TemplatePage) },
      { path: "segments", ...page(() => import("./pages/Segments.tsx"), (module) => module.SegmentsPage) },
      { path: "segments/new", ...page(() => import("./pages/Segments.tsx"), (module) => module.NewSegmentPage) },
      { path: "segments/:segmentId", ...page(() => import("./pages/Segments.tsx"), (module) => module.SegmentPage) },
      { path: "campaigns", ...page(() => import("./pages/Campaigns.tsx"), (module) => module.CampaignsPage) },
      { path: "campaigns/new", ...page(() => import("./pages/campaign/CampaignEditor.tsx"), (module) => module.NewCampaignPage) },
      { path: "campaigns/:campaignId", ...page(() => import("./pages/Campaigns.tsx"), (module) => module.CampaignPage) },
      { path: "campaigns/:campaignId/edit", ...page(() => import("./pages/campaign/CampaignEditor.tsx"), (module) => module.EditCampaignPage) },
      { path: "workflows", ...page(() => import("./pages/Workflows.tsx"), (module) => module.WorkflowsPage) },
      // The graph editor brings @xyflow/react.
      { path: "workflows/:workflowId", ...page(() => import("./pages/workflows/Workflow.tsx"), (module) => module.WorkflowPage) },
      { path: "emails", ...page(() => import("./pages/Emails.tsx"), (module) => module.EmailsPage) },
      { path: "emails/:emailId", ...page(() => import("./pages/Emails.tsx"), (module) => module.EmailPage) },
      { path: "events", ...page(() => import("./pages/Events.tsx"), (module) => module.EventsPage) },
      { path: "activity", ...page(() => import("./pages/Activity.tsx"), (module) => module.ActivityPage) },
      // uPlot comes with the analytics page only.
      { path: "analytics", ...page(() => import("./pages/Analytics.tsx"), (module) => module.AnalyticsPage) },
      { path: "domains", ...page(() => import("./pages/Domains.tsx"), (module) => module.DomainsPage) },
      { path: "destinations", ...page(() => import("./pages/Destinations.tsx"), (module) => module.DestinationsPage) },
      { path: "destinations/:destinationId", ...page(() => import("./pages/destinations/Destination.tsx"), (module) => module.DestinationPage) },
      {
        path: "settings",
        element: <SettingsLayout />,
        children: [
          { index: true, element: <Navigate to="members" replace /> },
          { path: "members", ...page(() => import("./pages/settings/Members.tsx"), (module) => module.MembersPage) },
          { path: "keys", ...page(() => import("./pages/settings/Keys.tsx"), (module) => module.KeysPage) },
          { path: "sending", ...page(() => import("./pages/settings/Sending.tsx"), (module) => module.SendingPage) },
          { path: "billing", ...page(() => import("./pages/settings/Billing.tsx"), (module) => module.BillingPage) },
          { path: "security", ...page(() => import("./pages/settings/Security.tsx"), (module) => module.SecurityPage) },
          { path: "danger", ...page(() => import("./pages/settings/Danger.tsx"), (module) => module.DangerPage) }
        ]
      },
      { path: "*", element: <NotFoundPage /> }
    ]
  }
])
