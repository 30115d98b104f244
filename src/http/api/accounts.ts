/** A user's projects, their members, keys, reset, health and billing (dashboard, session cookie). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { bodyErrors, ErrorDocs, inputErrors, serverErrors } from "./errors.ts"
import { Count, Email, Text, Timestamp } from "./schemas.ts"
import { SessionAuth } from "./security.ts"

const Role = Schema.Literals(["OWNER", "ADMIN", "MEMBER"])
const ProjectId = { id: Text }
/** A percentage (0..100). */
const Percent = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
/** Minor units of the currency (cents). */
const Amount = Schema.Int
const Ok = Schema.Struct({ success: Schema.Literal(true) })

const sessionErrors = [
  ErrorDocs.unauthorized,
  ErrorDocs.forbidden,
  ErrorDocs.rateLimited,
  ErrorDocs.notFound,
  ...inputErrors,
  ...serverErrors
] as const

const ProjectView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  role: Role,
  disabled: Schema.Boolean,
  disabledReason: Schema.NullOr(Schema.String),
  trackingEnabled: Schema.Boolean.annotate({ description: "Open and click tracking in the project's emails" }),
  createdAt: Timestamp
}).annotate({ identifier: "UserProject" })

const KeyKind = Schema.Literals(["public", "secret"])
const Keys = Schema.Struct({ id: Schema.String, publicKey: Schema.String, secretKey: Schema.String })

const Security = Schema.Struct({
  windowStart: Timestamp,
  sends: Count,
  bounces: Count,
  complaints: Count,
  bounceRate: Percent.annotate({ description: "Percent of sends" }),
  complaintRate: Percent.annotate({ description: "Percent of sends" }),
  thresholds: Schema.Struct({ maxBounceRate: Percent, maxComplaintRate: Percent, minSends: Count }),
  disabled: Schema.Boolean,
  disabledReason: Schema.NullOr(Schema.String),
  suspensions: Schema.Array(Schema.Struct({
    id: Schema.String,
    reason: Schema.String,
    bounceRate: Percent,
    complaintRate: Percent,
    sends: Count,
    createdAt: Timestamp,
    liftedAt: Schema.NullOr(Timestamp)
  }))
}).annotate({ identifier: "ProjectSecurity" })

const SetupState = Schema.Struct({
  hasVerifiedDomain: Schema.Boolean,
  hasTemplate: Schema.Boolean,
  hasContact: Schema.Boolean,
  hasTrackedEvent: Schema.Boolean,
  hasSentEmail: Schema.Boolean,
  complete: Schema.Boolean.annotate({
    description: "Every step done; a verified domain only when mail goes to a relay (GET /config: delivery.verifiedDomainRequired)"
  })
}).annotate({ identifier: "SetupState" })

const MemberView = Schema.Struct({ userId: Schema.String, email: Schema.String, role: Role, joinedAt: Timestamp })
const InvitationView = Schema.Struct({ id: Schema.String, email: Schema.String, role: Role, createdAt: Timestamp, expiresAt: Timestamp })
  .annotate({ identifier: "Invitation" })
/** The answer to an invitation sent: the link is shown here once (only its hash is stored) for the inviter to pass on. */
const InvitationSent = Schema.Struct({
  status: Schema.Literal("invited"),
  invitation: InvitationView,
  link: Schema.String.annotate({ description: "The single-use link also mailed to the email (valid 7 days)" })
})
const InvitationParams = { id: Text, invitationId: Text }

const Cap = Schema.NullOr(Count).annotate({ description: "Emails per calendar month (UTC); null = no cap" })
export const BillingLimits = Schema.Struct({
  transactional: Cap,
  campaigns: Cap,
  workflows: Cap,
  inbound: Cap
}).annotate({ identifier: "BillingLimits" })

const Consumption = Schema.Struct({
  periodStart: Timestamp,
  periodEnd: Timestamp,
  usage: Schema.Struct({ transactional: Count, campaigns: Count, workflows: Count, inbound: Count }),
  limits: BillingLimits
}).annotate({ identifier: "BillingConsumption" })

const billingDisabled = "404 BILLING_DISABLED when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not set."

export class AccountsApi extends HttpApiGroup.make("accounts")
  .add(
    HttpApiEndpoint.get("listProjects", "/users/@me/projects", { success: Schema.Array(ProjectView), error: sessionErrors }),
    HttpApiEndpoint.post("createProject", "/users/@me/projects", {
      payload: Schema.Struct({ name: Text.check(Schema.isNonEmpty(), Schema.isMaxLength(100)) }),
      success: Schema.Struct({ ...Keys.fields, name: Schema.String, role: Role }).pipe(HttpApiSchema.status(201)),
      error: [...sessionErrors, ...bodyErrors]
    }).annotate(OpenApi.Description, "Creates a project owned by the signed-in user; the answer carries its two keys (shown once)."),
    HttpApiEndpoint.patch("updateProject", "/users/@me/projects/:id", {
      params: ProjectId,
      payload: Schema.Struct({
        name: Schema.optional(Text.check(Schema.isNonEmpty(), Schema.isMaxLength(100))),
        trackingEnabled: Schema.optional(Schema.Boolean),
        disabled: Schema.optional(Schema.Literal(false)).annotate({ description: "false re-enables a disabled project (OWNER only)" })
      }),
      success: ProjectView,
      error: [...sessionErrors, ...bodyErrors]
    }).annotate(OpenApi.Description, "Renames the project, turns tracking on or off (ADMIN), or re-enables it (OWNER)."),
    HttpApiEndpoint.delete("deleteProject", "/users/@me/projects/:id", { params: ProjectId, success: Ok, error: sessionErrors })
      .annotate(OpenApi.Description, "Deletes the project and everything in it (OWNER)."),
    HttpApiEndpoint.post("regenerateKeys", "/users/@me/projects/:id/regenerate-keys", {
      params: ProjectId,
      success: Keys,
      error: sessionErrors
    })
      .annotate(
        OpenApi.Description,
        "Replaces both keys (ADMIN). The old ones answer 401 on every api process within 2 seconds; no grace period."
      ),
    HttpApiEndpoint.post("rotateKey", "/users/@me/projects/:id/keys/:kind/rotate", {
      params: { id: Text, kind: KeyKind },
      success: Schema.Struct({ id: Schema.String, kind: KeyKind, key: Schema.String }),
      error: sessionErrors
    }).annotate(
      OpenApi.Description,
      "Replaces one key (ADMIN), the other unchanged: the old one answers 401 on every api process within 2 seconds. " +
        "The answer carries the new key (a secret key is shown only here)."
    ),
    HttpApiEndpoint.get("publicKey", "/users/@me/projects/:id/public-key", {
      params: ProjectId,
      success: Schema.Struct({
        publicKey: Schema.NullOr(Schema.String).annotate({
          description: "null for a key made before public keys were kept in clear: rotating the public key shows it from then on"
        })
      }),
      error: sessionErrors
    }).annotate(OpenApi.Description, "The project's public key (it only tracks events and may ship in a web page), for any member."),
    HttpApiEndpoint.post("resetProject", "/users/@me/projects/:id/reset", {
      params: ProjectId,
      success: Schema.Struct({ success: Schema.Literal(true), resetAt: Timestamp }),
      error: sessionErrors
    }).annotate(
      OpenApi.Description,
      "Irreversibly wipes contacts, events, emails, segments, campaigns, workflows, templates, dead letters and idempotency " +
        "keys (ADMIN). Keys, members, domains, suppressions and billing stay; stream messages queued before the reset are skipped."
    ),
    HttpApiEndpoint.get("userProjectSecurity", "/users/@me/projects/:id/security", {
      params: ProjectId,
      success: Security,
      error: sessionErrors
    }),
    HttpApiEndpoint.get("projectSecurity", "/projects/:id/security", { params: ProjectId, success: Security, error: sessionErrors })
      .annotate(
        OpenApi.Description,
        "Bounce and complaint rates over the last 7 days (since the last lifted suspension), and suspensions."
      ),
    HttpApiEndpoint.get("setupState", "/projects/:id/setup-state", { params: ProjectId, success: SetupState, error: sessionErrors })
      .annotate(
        OpenApi.Description,
        "What a new project still lacks: a verified domain, a template, a contact, a tracked event, a sent email."
      ),
    HttpApiEndpoint.get("listMembers", "/projects/:id/members", {
      params: ProjectId,
      success: Schema.Struct({ members: Schema.Array(MemberView), invitations: Schema.Array(InvitationView) }),
      error: sessionErrors
    }),
    HttpApiEndpoint.post("addMember", "/projects/:id/members", {
      params: ProjectId,
      payload: Schema.Struct({ email: Email, role: Schema.optional(Role).annotate({ description: "Default MEMBER" }) }),
      success: InvitationSent.pipe(HttpApiSchema.status(202)),
      error: [...sessionErrors, ...bodyErrors, ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "Invites an email (202): a single-use link valid 7 days is mailed to it and returned in `link`; they join when they " +
        "open it, signing up with it or signed in as that email. An email with an account is invited too, never added at " +
        "once: whoever registered an address first need not own it. Inviting an email again replaces its pending " +
        "invitation (the old link stops working). ADMIN; only an OWNER can invite an OWNER. 409 ALREADY_MEMBER."
    ),
    HttpApiEndpoint.get("listInvitations", "/projects/:id/invitations", {
      params: ProjectId,
      success: Schema.Struct({ data: Schema.Array(InvitationView) }),
      error: sessionErrors
    }).annotate(OpenApi.Description, "The project's pending invitations (not accepted, withdrawn or expired), oldest first."),
    HttpApiEndpoint.delete("withdrawInvitation", "/projects/:id/invitations/:invitationId", {
      params: InvitationParams,
      success: Ok,
      error: sessionErrors
    }).annotate(
      OpenApi.Description,
      "Withdraws a pending invitation: its link stops working at once (ADMIN; OWNER for an invitation as OWNER). 404 when it is not pending."
    ),
    HttpApiEndpoint.post("resendInvitation", "/projects/:id/invitations/:invitationId/resend", {
      params: InvitationParams,
      success: InvitationSent,
      error: sessionErrors
    }).annotate(
      OpenApi.Description,
      "Mails a pending invitation again with a new link, valid 7 days from now; the old link stops working (ADMIN; OWNER " +
        "for an invitation as OWNER). 404 when it is not pending."
    ),
    HttpApiEndpoint.patch("updateMember", "/projects/:id/members/:userId", {
      params: { id: Text, userId: Text },
      payload: Schema.Struct({ role: Role }),
      success: MemberView,
      error: [...sessionErrors, ...bodyErrors, ErrorDocs.conflict]
    }).annotate(OpenApi.Description, "Changes a role (ADMIN; OWNER to make or demote an owner). 409 LAST_OWNER for the last owner."),
    HttpApiEndpoint.delete("removeMember", "/projects/:id/members/:userId", {
      params: { id: Text, userId: Text },
      success: Ok,
      error: [...sessionErrors, ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "Removes a member (ADMIN; OWNER to remove an owner) or lets a member leave (their own id). 409 LAST_OWNER for the last owner."
    ),
    HttpApiEndpoint.get("getBillingLimits", "/users/@me/projects/:id/billing-limits", {
      params: ProjectId,
      success: BillingLimits,
      error: sessionErrors
    })
      .annotate(OpenApi.Description, "The per-category monthly caps (any member; null = none)."),
    HttpApiEndpoint.put("putBillingLimits", "/users/@me/projects/:id/billing-limits", {
      params: ProjectId,
      payload: BillingLimits,
      success: BillingLimits,
      error: [...sessionErrors, ...bodyErrors]
    }).annotate(
      OpenApi.Description,
      "Sets the per-category monthly caps (ADMIN). A /v1/send over the transactional cap, or a campaign test send over the " +
        "campaigns cap, answers 403 BILLING_LIMIT_EXCEEDED."
    ),
    HttpApiEndpoint.get("billingConsumption", "/users/@me/projects/:id/billing-consumption", {
      params: ProjectId,
      success: Consumption,
      error: sessionErrors
    })
      .annotate(OpenApi.Description, "This month's emails accepted by the sender, per category (each email counted once; any member)."),
    HttpApiEndpoint.post("checkout", "/users/@me/projects/:id/checkout", {
      params: ProjectId,
      success: Schema.Struct({ url: Schema.String }),
      error: [...sessionErrors, ErrorDocs.badGateway]
    }).annotate(OpenApi.Description, `A Stripe Checkout session for the subscription (ADMIN). ${billingDisabled}`),
    HttpApiEndpoint.post("billingPortal", "/users/@me/projects/:id/billing-portal", {
      params: ProjectId,
      success: Schema.Struct({ url: Schema.String }),
      error: [...sessionErrors, ErrorDocs.conflict, ErrorDocs.badGateway]
    }).annotate(OpenApi.Description, `A Stripe billing portal session (ADMIN; 409 NO_SUBSCRIPTION before a checkout). ${billingDisabled}`),
    HttpApiEndpoint.get("billingInvoices", "/users/@me/projects/:id/billing-invoices", {
      params: ProjectId,
      success: Schema.Struct({
        data: Schema.Array(Schema.Struct({
          id: Schema.String,
          number: Schema.NullOr(Schema.String),
          status: Schema.NullOr(Schema.String),
          amountDue: Amount,
          amountPaid: Amount,
          currency: Schema.String,
          createdAt: Timestamp,
          hostedInvoiceUrl: Schema.NullOr(Schema.String),
          pdfUrl: Schema.NullOr(Schema.String)
        }))
      }),
      error: [...sessionErrors, ErrorDocs.badGateway]
    }).annotate(OpenApi.Description, `The project's Stripe invoices, newest first (ADMIN). ${billingDisabled}`)
  )
  .middleware(SessionAuth)
  .annotateMerge(OpenApi.annotations({
    title: "Projects and members",
    description: "A signed-in user's projects (session cookie). Another user's project answers 404, like a missing one."
  }))
{}

export class BillingWebhookApi extends HttpApiGroup.make("billingWebhook")
  .add(
    HttpApiEndpoint.post("stripe", "/webhooks/incoming/stripe", {
      success: Schema.Struct({ received: Schema.Literal(true) }),
      error: [ErrorDocs.badRequest, ErrorDocs.notFound, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "Stripe events (checkout completed, subscription changes), verified with the Stripe-Signature header and " +
        `STRIPE_WEBHOOK_SECRET (400 INVALID_SIGNATURE otherwise). ${billingDisabled}`
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "Billing webhook", description: "Called by Stripe, not by applications" }))
{}
