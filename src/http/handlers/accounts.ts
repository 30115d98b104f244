/** A signed-in user's projects: settings, keys, reset, health, members and billing. */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformMail } from "../../accounts/PlatformMail.ts"
import { StripeBilling } from "../../accounts/StripeBilling.ts"
import { resumeHeldMail } from "../../billing/heldMail.ts"
import { AppConfig } from "../../config.ts"
import { normalizeEmail } from "../../domain/email.ts"
import { isUuid } from "../../domain/ids.ts"
import type { Permission, Role } from "../../domain/permissions.ts"
import { AccountTokens, type IssuedInvitation, type PendingInvitation } from "../../store/AccountTokens.ts"
import { Billing, type Limits } from "../../store/Billing.ts"
import { type Member, Members } from "../../store/Members.ts"
import { ProjectCacheInvalidation } from "../../store/ProjectCacheInvalidation.ts"
import { ProjectData } from "../../store/ProjectData.ts"
import { MIN_SENDS, ProjectHealth } from "../../store/ProjectHealth.ts"
import { type ProjectDetails, Projects } from "../../store/Projects.ts"
import { Users } from "../../store/Users.ts"
import { Outbox } from "../../stream/Outbox.ts"
import { Api } from "../api/Api.ts"
import { billingPagePath } from "../api/dashboard.ts"
import { CurrentUser } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { DashboardSessions } from "../session.ts"
import { BadGateway, Conflict, Forbidden, NotFound } from "../api/statusErrors.ts"

const projectView = (project: ProjectDetails, role: Role) => ({
  id: project.id,
  name: project.name,
  role,
  disabled: project.disabled,
  disabledReason: project.disabledReason,
  trackingEnabled: project.trackingEnabled,
  createdAt: project.createdAt.toISOString()
})

const memberView = (member: Member) => ({
  userId: member.userId,
  email: member.email,
  role: member.role,
  joinedAt: member.joinedAt.toISOString()
})

const invitationView = (invitation: PendingInvitation) => ({
  id: invitation.id,
  email: invitation.email,
  role: invitation.role,
  createdAt: invitation.createdAt.toISOString(),
  expiresAt: invitation.expiresAt.toISOString()
})

const invitationText = (inviter: string, projectName: string, role: Role, link: string) =>
  `${inviter} invited you to the project "${projectName}" as ${role}. Open this link to join (valid for 7 days, once): ` +
  `sign up with this email, or sign in if it has an account already.\n${link}\n\nIf you did not expect it, ignore this message.`

const lastOwner = Conflict.of("LAST_OWNER", "A project keeps at least one owner: make someone else owner first")

const ownersOnly = new Forbidden({
  code: "FORBIDDEN",
  message: "Only an owner can make, demote or remove owners",
  details: { required: "own" }
})

const billingDisabled = new NotFound({
  code: "BILLING_DISABLED",
  message: "Billing is not enabled on this installation",
  suggestion: "Set STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET to enable it."
})

export const AccountsHandlers = HttpApiBuilder.group(
  Api,
  "accounts",
  Effect.fnUntraced(function*(handlers) {
    const config = yield* AppConfig
    const sessions = yield* DashboardSessions
    const projects = yield* Projects
    const members = yield* Members
    const users = yield* Users
    const tokens = yield* AccountTokens
    const billing = yield* Billing
    const health = yield* ProjectHealth
    const data = yield* ProjectData
    const invalidation = yield* ProjectCacheInvalidation
    const stripe = yield* StripeBilling
    const mail = yield* PlatformMail
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox

    /** The signed-in user's access to the project, if their role allows `permission` (404 / 403 otherwise). */
    const access = (projectId: string, permission: Permission) =>
      Effect.flatMap(
        CurrentUser,
        ({ user }) => Effect.map(sessions.access(user.id, projectId, permission), (found) => ({ ...found, user }))
      )

    const security = (projectId: string) =>
      Effect.gen(function*() {
        const { project } = yield* access(projectId, "view")
        const rates = yield* health.rates(projectId)
        const suspensions = yield* health.suspensions(projectId)
        return {
          ...rates,
          windowStart: rates.windowStart.toISOString(),
          thresholds: { maxBounceRate: config.maxBounceRate, maxComplaintRate: config.maxComplaintRate, minSends: MIN_SENDS },
          disabled: project.disabled,
          disabledReason: project.disabledReason,
          suspensions: suspensions.map((suspension) => ({
            ...suspension,
            createdAt: suspension.createdAt.toISOString(),
            liftedAt: suspension.liftedAt?.toISOString() ?? null
          }))
        }
      })

    /** Where Stripe sends the user back: the dashboard's billing page of the project. */
    const billingPage = (projectId: string) => `${config.publicUrl}${billingPagePath(projectId)}`
    const stripeEnabled = Effect.suspend(() => (stripe.enabled ? Effect.succeed(stripe.enabled) : Effect.fail(billingDisabled)))
    const stripeError = (error: { readonly message: string }) =>
      Effect.as(
        Effect.logWarning("Stripe call failed", { error: error.message }),
        new BadGateway({ code: "BILLING_PROVIDER_ERROR", message: "Stripe did not answer as expected" })
      )

    /** Mails an invitation's link (queued) and answers it, with the link shown once to the inviter. */
    const sendInvitation = Effect.fnUntraced(function*(issued: IssuedInvitation, inviter: string, projectName: string) {
      const link = mail.link("/accept-invitation", issued.token)
      yield* mail.queue({
        to: issued.invitation.email,
        subject: `You are invited to ${projectName}`,
        text: invitationText(inviter, projectName, issued.invitation.role, link)
      })
      return { status: "invited" as const, invitation: invitationView(issued.invitation), link }
    })

    /** A pending invitation the caller may withdraw or resend: `manage`, and `own` for one as OWNER. */
    const manageableInvitation = Effect.fnUntraced(function*(projectId: string, invitationId: string) {
      const found = yield* access(projectId, "manage")
      const invitation = isUuid(invitationId) ? yield* tokens.pendingInvitation(projectId, invitationId) : undefined
      if (!invitation) return yield* NotFound.of("Invitation")
      if (invitation.role === "OWNER" && found.role !== "OWNER") return yield* ownersOnly
      return { ...found, invitation }
    })

    /** A member's current role (404 when they are not one). */
    const roleOfMember = Effect.fnUntraced(function*(projectId: string, userId: string) {
      const role = isUuid(userId) ? yield* members.roleOf(projectId, userId) : undefined
      if (!role) return yield* NotFound.of("Member")
      return role
    })

    return handlers
      .handle("listProjects", () =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const memberships = yield* members.projectsOf(user.id)
          const details = yield* Effect.forEach(memberships, (membership) => projects.details(membership.projectId))
          return memberships.flatMap((membership, index) => {
            const project = details[index]
            return project ? [projectView(project, membership.role)] : []
          })
        })))
      .handle("createProject", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const created = yield* projects.create(payload.name)
          yield* members.add(created.id, user.id, "OWNER")
          return { id: created.id, name: created.name, publicKey: created.publicKey, secretKey: created.secretKey, role: "OWNER" as const }
        })))
      .handle("updateProject", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const { role, user } = yield* access(params.id, payload.disabled === false ? "own" : "manage")
          if (payload.name !== undefined) yield* projects.rename(params.id, payload.name)
          if (payload.trackingEnabled !== undefined)
            yield* projects.updateMailSettings(params.id, { trackingEnabled: payload.trackingEnabled })
          if (payload.disabled === false) {
            yield* health.enable(params.id, user.id)
            yield* invalidation.announce(params.id)
          }
          const project = yield* projects.details(params.id)
          if (!project)
            return yield* NotFound.of("Project")
          return projectView(project, role)
        })))
      .handle("deleteProject", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "own")
          yield* projects.remove(params.id)
          yield* invalidation.announce(params.id)
          return { success: true as const }
        })))
      .handle("regenerateKeys", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const keys = yield* projects.rotateKeys(params.id)
          if (!keys) return yield* NotFound.of("Project")
          // Other api processes drop their cached keys as this arrives (well within 2 s).
          yield* invalidation.announce(params.id)
          return { id: params.id, ...keys }
        })))
      .handle("rotateKey", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const key = yield* projects.rotateKey(params.id, params.kind)
          if (key === undefined) return yield* NotFound.of("Project")
          yield* invalidation.announce(params.id)
          return { id: params.id, kind: params.kind, key }
        })))
      .handle("publicKey", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "view")
          const publicKey = yield* projects.publicKey(params.id)
          if (publicKey === undefined) return yield* NotFound.of("Project")
          return { publicKey }
        })))
      .handle("resetProject", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const result = yield* data.reset(params.id)
          if (!result) return yield* NotFound.of("Project")
          yield* Effect.logInfo("project data reset", { projectId: params.id, resetSeq: result.resetSeq })
          return { success: true as const, resetAt: new Date(yield* Clock.currentTimeMillis).toISOString() }
        })))
      .handle("userProjectSecurity", ({ params }) => rendered(security(params.id)))
      .handle("projectSecurity", ({ params }) => rendered(security(params.id)))
      .handle("setupState", ({ params }) => rendered(Effect.andThen(access(params.id, "view"), health.setupState(params.id))))
      .handle("listMembers", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "view")
          return {
            members: (yield* members.list(params.id)).map(memberView),
            invitations: (yield* tokens.pendingInvitations(params.id)).map(invitationView)
          }
        })))
      .handle("addMember", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const { role: myRole, project, user: inviter } = yield* access(params.id, "manage")
          const role = payload.role ?? "MEMBER"
          if (role === "OWNER" && myRole !== "OWNER") return yield* ownersOnly
          const email = normalizeEmail(payload.email)
          // Never added at once, even with an account: whoever registered an address first need not own it. The
          // invitation's link, mailed to the address, decides who joins.
          const existing = yield* users.byEmail(email)
          if (existing && (yield* members.roleOf(params.id, existing.id))) {
            return yield* Conflict.of("ALREADY_MEMBER", "This user is already a member")
          }
          // Inviting again replaces the pending invitation, which takes an OWNER if that one was as OWNER.
          const pending = (yield* tokens.pendingInvitations(params.id)).filter((entry) => entry.email === email)
          if (pending.some((entry) => entry.role === "OWNER") && myRole !== "OWNER") return yield* ownersOnly
          return yield* sendInvitation(yield* tokens.invite(params.id, email, role), inviter.email, project.name)
        })))
      .handle("listInvitations", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "view")
          return { data: (yield* tokens.pendingInvitations(params.id)).map(invitationView) }
        })))
      .handle("withdrawInvitation", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* manageableInvitation(params.id, params.invitationId)
          if (!(yield* tokens.withdrawInvitation(params.id, params.invitationId))) return yield* NotFound.of("Invitation")
          return { success: true as const }
        })))
      .handle("resendInvitation", ({ params }) =>
        rendered(Effect.gen(function*() {
          const { project, user } = yield* manageableInvitation(params.id, params.invitationId)
          const issued = yield* tokens.reissueInvitation(params.id, params.invitationId)
          if (!issued) return yield* NotFound.of("Invitation")
          return yield* sendInvitation(issued, user.email, project.name)
        })))
      .handle("updateMember", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const { role: myRole } = yield* access(params.id, "manage")
          const current = yield* roleOfMember(params.id, params.userId)
          if ((current === "OWNER" || payload.role === "OWNER") && myRole !== "OWNER") return yield* ownersOnly
          yield* members.changeRole(params.id, params.userId, payload.role).pipe(Effect.catchTag("LastOwner", () => Effect.fail(lastOwner)))
          const member = (yield* members.list(params.id)).find((entry) => entry.userId === params.userId)
          if (!member) return yield* NotFound.of("Member")
          return memberView(member)
        })))
      .handle("removeMember", ({ params }) =>
        rendered(Effect.gen(function*() {
          const { user } = yield* CurrentUser
          // Anyone may leave; removing someone else takes `manage`, and an owner takes `own`.
          const leaving = params.userId === user.id
          const { role: myRole } = yield* access(params.id, leaving ? "view" : "manage")
          const current = yield* roleOfMember(params.id, params.userId)
          if (!leaving && current === "OWNER" && myRole !== "OWNER") return yield* ownersOnly
          yield* members.remove(params.id, params.userId).pipe(Effect.catchTag("LastOwner", () => Effect.fail(lastOwner)))
          return { success: true as const }
        })))
      // Every member may read the caps and the month's usage (why a campaign waits); only `manage` changes them.
      .handle("getBillingLimits", ({ params }) => rendered(Effect.andThen(access(params.id, "view"), billing.limits(params.id))))
      .handle("putBillingLimits", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const limits = yield* billing.setLimits(params.id, payload as Limits)
          // A raised (or removed) cap resumes the campaigns and workflow sends held at the old one.
          yield* resumeHeldMail(sql, outbox, billing, params.id)
          return limits
        })))
      .handle("billingConsumption", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "view")
          const consumption = yield* billing.consumption(params.id)
          return {
            periodStart: consumption.periodStart.toISOString(),
            periodEnd: consumption.periodEnd.toISOString(),
            usage: consumption.usage,
            limits: yield* billing.limits(params.id)
          }
        })))
      .handle("checkout", ({ params }) =>
        rendered(Effect.gen(function*() {
          const { user } = yield* access(params.id, "manage")
          const enabled = yield* stripeEnabled
          return {
            url: yield* enabled.checkout(params.id, user.email, billingPage(params.id)).pipe(
              Effect.catchTag("StripeFailed", (error) => Effect.flip(stripeError(error)))
            )
          }
        })))
      .handle("billingPortal", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const enabled = yield* stripeEnabled
          const url = yield* enabled.portal(params.id, billingPage(params.id)).pipe(
            Effect.catchTag("StripeFailed", (error) => Effect.flip(stripeError(error)))
          )
          if (!url) return yield* Conflict.of("NO_SUBSCRIPTION", "The project has no billing account yet: start with a checkout")
          return { url }
        })))
      .handle("billingInvoices", ({ params }) =>
        rendered(Effect.gen(function*() {
          yield* access(params.id, "manage")
          const enabled = yield* stripeEnabled
          return {
            data: yield* enabled.invoices(params.id).pipe(Effect.catchTag("StripeFailed", (error) => Effect.flip(stripeError(error))))
          }
        })))
  })
)
