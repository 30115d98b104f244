/**
 * The app's routes. Everything lives under the roots in src/http/api/dashboard.ts (the server answers
 * the app's page there and nowhere else); a path under a root that matches nothing shows NotFoundPage.
 */
import { createBrowserRouter, Navigate } from "react-router"
import { RouteError } from "./components/ErrorBoundary.tsx"
import { PlainLayout, ProjectLayout } from "./components/Layout.tsx"
import { CampaignPage, CampaignsPage } from "./pages/Campaigns.tsx"
import { ActivityPage } from "./pages/Activity.tsx"
import { EditCampaignPage, NewCampaignPage } from "./pages/campaign/CampaignEditor.tsx"
import { ContactPage } from "./pages/Contact.tsx"
import { ContactsPage } from "./pages/Contacts.tsx"
import { DomainsPage } from "./pages/Domains.tsx"
import { EventsPage } from "./pages/Events.tsx"
import { HomePage } from "./pages/Home.tsx"
import { NotFoundPage } from "./pages/NotFound.tsx"
import { ProjectsPage } from "./pages/Projects.tsx"
import { NewSegmentPage, SegmentPage, SegmentsPage } from "./pages/Segments.tsx"
import { TemplatesPage } from "./pages/Templates.tsx"
import { WorkflowsPage } from "./pages/Workflows.tsx"
import { AcceptInvitationPage } from "./pages/account/Invitation.tsx"
import { SignInPage, SignUpPage } from "./pages/account/SignIn.tsx"
import { ForgotPasswordPage, ResetPasswordPage, VerifyEmailPage } from "./pages/account/Tokens.tsx"
import { BillingPage } from "./pages/settings/Billing.tsx"
import { DangerPage } from "./pages/settings/Danger.tsx"
import { KeysPage } from "./pages/settings/Keys.tsx"
import { MembersPage } from "./pages/settings/Members.tsx"
import { SecurityPage } from "./pages/settings/Security.tsx"
import { SendingPage } from "./pages/settings/Sending.tsx"
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

export const router = createBrowserRouter([
  { path: "/", element: <Navigate to="/p" replace /> },
  {
    element: <PlainLayout />,
    errorElement: <RouteError />,
    children: [
      { path: "/p", element: <ProjectsPage /> },
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
      { path: "contacts/import", lazy: () => import("./pages/ContactImport.tsx").then((module) => ({ Component: module.ContactImportPage })) },
      { path: "contacts/:contactId", element: <ContactPage /> },
      { path: "templates", element: <TemplatesPage /> },
      // The editor brings CodeMirror (most of the app's weight): loaded when a template is opened.
      { path: "templates/new", lazy: () => import("./pages/TemplateEditor.tsx").then((module) => ({ Component: module.NewTemplatePage })) },
      { path: "templates/:templateId", lazy: () => import("./pages/TemplateEditor.tsx").then((module) => ({ Component: module.TemplatePage })) },
      { path: "segments", element: <SegmentsPage /> },
      { path: "segments/new", element: <NewSegmentPage /> },
      { path: "segments/:segmentId", element: <SegmentPage /> },
      { path: "campaigns", element: <CampaignsPage /> },
      { path: "campaigns/new", element: <NewCampaignPage /> },
      { path: "campaigns/:campaignId", element: <CampaignPage /> },
      { path: "campaigns/:campaignId/edit", element: <EditCampaignPage /> },
      { path: "workflows", element: <WorkflowsPage /> },
      // The graph editor brings @xyflow/react: loaded when a workflow is opened.
      { path: "workflows/:workflowId", lazy: () => import("./pages/workflows/Workflow.tsx").then((module) => ({ Component: module.WorkflowPage })) },
      { path: "events", element: <EventsPage /> },
      { path: "activity", element: <ActivityPage /> },
      // uPlot comes with the analytics page only.
      { path: "analytics", lazy: () => import("./pages/Analytics.tsx").then((module) => ({ Component: module.AnalyticsPage })) },
      { path: "domains", element: <DomainsPage /> },
      {
        path: "settings",
        element: <SettingsLayout />,
        children: [
          { index: true, element: <Navigate to="members" replace /> },
          { path: "members", element: <MembersPage /> },
          { path: "keys", element: <KeysPage /> },
          { path: "sending", element: <SendingPage /> },
          { path: "billing", element: <BillingPage /> },
          { path: "security", element: <SecurityPage /> },
          { path: "danger", element: <DangerPage /> }
        ]
      },
      { path: "*", element: <NotFoundPage /> }
    ]
  }
])
