/**
 * Project member roles and what each may do: the one permission matrix of the dashboard (docs/api-notes.md
 * shows the same table). Every session-authenticated request is checked here, whether it reaches a
 * project resource (`X-Project-Id`) or a project's account endpoints (`/users/@me/projects/:id/...`).
 */

export const Roles = ["OWNER", "ADMIN", "MEMBER"] as const
export type Role = typeof Roles[number]

/**
 * - `view`: see the project, its members, setup state, security page, and this month's usage and caps.
 * - `content`: contacts (with imports, exports and bulk jobs), templates, segments, campaigns, workflows,
 *   events, activity and analytics, sending and the sent emails, verification and image uploads.
 * - `manage`: keys, members (other than owners), billing, domains, dead letters, settings, reset.
 * - `own`: delete the project, make, demote or remove owners, re-enable a disabled project.
 */
export type Permission = "view" | "content" | "manage" | "own"

const granted: Record<Role, ReadonlySet<Permission>> = {
  OWNER: new Set(["view", "content", "manage", "own"]),
  ADMIN: new Set(["view", "content", "manage"]),
  MEMBER: new Set(["view", "content"])
}

export const allows = (role: Role, permission: Permission): boolean => granted[role].has(permission)

export const isRole = (value: unknown): value is Role => typeof value === "string" && (Roles as ReadonlyArray<string>).includes(value)

/**
 * API groups (as named in src/http/api) whose endpoints are project content; everything else needs
 * `manage` (so a new group is an ADMIN's until it is listed here). test/accounts/roles.test.ts walks
 * every route with every role against that table.
 */
const contentGroups: ReadonlySet<string> = new Set([
  "contacts",
  "contactJobs",
  "events",
  "segments",
  "templates",
  "campaigns",
  "workflows",
  "send",
  "emails",
  "verify",
  "track",
  "uploads",
  "activity",
  "analytics"
])

/** Endpoints of content groups that touch project secrets or delivery plumbing anyway. */
const managedEndpoints: ReadonlySet<string> = new Set(["workflows.webhookSecret"])

/** What an existing project-scoped endpoint (reached with a session cookie) requires. */
export const permissionForEndpoint = (group: string, endpoint: string): Permission =>
  contentGroups.has(group) && !managedEndpoints.has(`${group}.${endpoint}`) ? "content" : "manage"

/** Endpoints that send mail: an unverified user may not call them when REQUIRE_EMAIL_VERIFICATION is on. */
const sendingEndpoints: ReadonlySet<string> = new Set(["campaigns.send", "campaigns.test", "send.send"])

export const sendsMail = (group: string, endpoint: string): boolean => sendingEndpoints.has(`${group}.${endpoint}`)
