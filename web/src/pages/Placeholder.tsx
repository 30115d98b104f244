/**
 * Pages whose API is not on main yet. Each names the endpoints it will use and the issue that brings
 * them, so nothing pretends to work.
 */
import { Page } from "../components/Page.tsx"

export interface Pending {
  readonly title: string
  readonly purpose: string
  readonly endpoints: ReadonlyArray<string>
  readonly issue: number
}

export function Placeholder({ title, purpose, endpoints, issue }: Pending) {
  return (
    <Page title={title}>
      <div className="rounded-lg border border-slate-200 bg-white p-6">
        <p className="text-slate-700">{purpose}</p>
        <p className="mt-4 text-sm font-medium text-slate-600">Not available yet: waits for issue #{issue}, which adds</p>
        <ul className="mt-2 space-y-1 text-sm">
          {endpoints.map((endpoint) => <li key={endpoint}><code className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-slate-800">{endpoint}</code></li>)}
        </ul>
      </div>
    </Page>
  )
}

const ACCOUNTS = 15

export const accountPages = {
  signin: {
    title: "Sign in",
    purpose: "Sign in with your email and password, or with a configured OAuth provider.",
    endpoints: ["POST /auth/login", "GET /auth/oauth-config"],
    issue: ACCOUNTS
  },
  signup: {
    title: "Create an account",
    purpose: "Create the account you sign in with; the first user of an installation owns its first project.",
    endpoints: ["POST /auth/signup", "GET /config"],
    issue: ACCOUNTS
  },
  verifyEmail: {
    title: "Verify your email",
    purpose: "Confirm your email address with the link we mailed you.",
    endpoints: ["POST /auth/verify-email", "POST /auth/request-verification"],
    issue: ACCOUNTS
  },
  forgotPassword: {
    title: "Forgot your password",
    purpose: "Ask for a link to choose a new password.",
    endpoints: ["POST /auth/request-password-reset"],
    issue: ACCOUNTS
  },
  resetPassword: {
    title: "Choose a new password",
    purpose: "Set a new password with the link from the reset mail.",
    endpoints: ["POST /auth/reset-password"],
    issue: ACCOUNTS
  },
  acceptInvitation: {
    title: "Join a project",
    purpose: "Accept the invitation to a project you were mailed.",
    endpoints: ["POST /projects/:id/members (invitation)", "GET /users/@me/projects"],
    issue: ACCOUNTS
  },
  settings: {
    title: "Settings",
    purpose: "API keys, members, send rate and tracking, billing limits and consumption, security and the danger zone.",
    endpoints: [
      "POST /users/@me/projects/:id/regenerate-keys",
      "GET|POST /projects/:id/members",
      "GET|PUT /users/@me/projects/:id/billing-limits",
      "GET /users/@me/projects/:id/billing-consumption",
      "GET /projects/:id/security",
      "POST /users/@me/projects/:id/reset"
    ],
    issue: ACCOUNTS
  }
} satisfies Record<string, Pending>
