/**
 * The signed-in user and their projects. These calls are the account's, not a project's: their query
 * keys live under ["account"], and they never carry X-Project-Id.
 */
import { QueryClient, useQuery } from "@tanstack/react-query"
import { allows, type Permission } from "../../../src/domain/permissions.ts"
import { DASHBOARD_ROOTS } from "../../../src/http/api/dashboard.ts"
import { type ApiClient, ApiFailure, callApi } from "./client.ts"
import { retryUnlessClientError, useProjectId } from "./hooks.ts"
import type { Effect } from "effect"

export const accountKey = (...key: ReadonlyArray<string>) => ["account", ...key]

export const useAccountQuery = <A>(key: ReadonlyArray<string>, call: (client: ApiClient) => Effect.Effect<A, unknown>) =>
  useQuery<A, ApiFailure>({
    queryKey: accountKey(...key),
    queryFn: ({ signal }) => callApi(undefined, call, signal),
    retry: retryUnlessClientError
  })

export const useMe = () => useAccountQuery(["me"], (client) => client.auth.me({}))

/** The installation's settings (GET /config): the same for everyone, asked once per session. */
export const useInstallation = () => useAccountQuery(["config"], (client) => client.config({}))

export const useProjects = () => useAccountQuery(["projects"], (client) => client.accounts.listProjects({}))

/** The current project as the user's project list describes it (its name and the user's role), once loaded. */
export const useCurrentProject = () => {
  const projectId = useProjectId()
  const projects = useProjects()
  const project = projects.data?.find((entry) => entry.id === projectId)
  return { projects, project, can: (permission: Permission) => project !== undefined && allows(project.role, permission) }
}

/** The pages a visitor without a session may see: sign-in and the other account pages. */
const ACCOUNT_ROOTS = DASHBOARD_ROOTS.filter((root) => root !== "/p")

export const isAccountPage = (pathname: string) => ACCOUNT_ROOTS.some((root) => pathname === root || pathname.startsWith(`${root}/`))

/** Where to go after signing in: a path of this app only (never another site). */
export const safeNext = (next: string | null): string =>
  next !== null && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/p"

export const signInPath = (next: string) => `/signin?next=${encodeURIComponent(next)}`

/** A new session (or none): nothing cached under the previous one may be shown. */
export const forgetEverything = (queryClient: QueryClient) => queryClient.removeQueries()

/** The installation's configuration (GET /config, no session needed): how mail is delivered, which sign-ins exist. */
export const useServerConfig = () =>
  useQuery({
    queryKey: ["config"],
    queryFn: ({ signal }) => callApi(undefined, (client) => client.config({}), signal),
    retry: retryUnlessClientError,
    // It changes only when the server restarts with other settings.
    staleTime: Infinity
  })

/** Under local delivery (no SMTP_URL) nothing leaves the machine and sender domains need no verification. */
export const useDelivery = () => useServerConfig().data?.delivery
