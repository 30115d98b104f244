/**
 * The paths the web dashboard owns. The server answers the app's page at `/` and at each root (and
 * below it); the app routes under the same roots; tests check no API endpoint lives there. Defined
 * here, in the contract, because all three import it.
 */
export const DASHBOARD_ROOTS = [
  "/p",
  "/signin",
  "/signup",
  "/verify-email",
  "/forgot-password",
  "/reset-password",
  "/accept-invitation"
] as const

export type DashboardRoot = typeof DASHBOARD_ROOTS[number]

/** Where the build's hashed files are served (Vite's default `assetsDir`). */
export const DASHBOARD_ASSETS = "/assets"

/**
 * A project's billing page in the dashboard (web/src/routes.tsx: `/p/:projectId`, then `settings/billing`):
 * where Stripe's checkout and billing portal send the user back to.
 */
export const billingPagePath = (projectId: string) => `/p/${encodeURIComponent(projectId)}/settings/billing`
