/** The HTTP contract: every group, endpoint, schema and documented error. Imports nothing server-side. */
import { HttpApi, OpenApi } from "effect/http-api"
import { ContactsApi } from "./contacts.ts"
import { ContactJobsApi } from "./contactJobs.ts"
import { EventsApi } from "./events.ts"
import { SegmentsApi } from "./segments.ts"
import { SystemApi } from "./system.ts"
import { TrackApi } from "./track.ts"
import { VerifyApi } from "./verify.ts"
import { CampaignsApi } from "./campaigns.ts"
import { WorkflowsApi } from "./workflows.ts"
import { DomainsApi } from "./domains.ts"
import { LinksApi } from "./links.ts"
import { SendApi } from "./send.ts"
import { EmailsApi } from "./emails.ts"
import { TemplatesApi } from "./templates.ts"
import { WebhooksApi } from "./webhooks.ts"
import { DeadLettersApi } from "./deadLetters.ts"
import { DestinationsApi } from "./destinations.ts"
import { ActivityApi } from "./activity.ts"
import { AnalyticsApi } from "./analytics.ts"
import { LiveApi } from "./live.ts"
import { explicitOpenObjects } from "./openApiDocument.ts"
import { AuthApi } from "./auth.ts"
import { AccountsApi, BillingWebhookApi } from "./accounts.ts"
import { UploadedFilesApi, UploadsApi } from "./uploads.ts"

export class Api extends HttpApi.make("mailstream")
  .add(SystemApi)
  .add(TrackApi)
  .add(ContactsApi)
  .add(ContactJobsApi)
  .add(EventsApi)
  .add(SegmentsApi)
  .add(VerifyApi)
  .add(SendApi)
  .add(EmailsApi)
  .add(TemplatesApi)
  .add(CampaignsApi)
  .add(WorkflowsApi)
  .add(DomainsApi)
  .add(LinksApi)
  .add(WebhooksApi)
  .add(DeadLettersApi)
  .add(DestinationsApi)
  .add(AuthApi)
  .add(AccountsApi)
  .add(BillingWebhookApi)
  .add(UploadsApi)
  .add(UploadedFilesApi)
  .add(ActivityApi)
  .add(AnalyticsApi)
  .add(LiveApi)
  // Report every invalid field of a request at once, not just the first.
  .annotate(HttpApi.PayloadParseOptions, { errors: "all" })
  .annotate(OpenApi.Transform, explicitOpenObjects)
  .annotateMerge(OpenApi.annotations({
    title: "mailstream",
    version: "0.1.0",
    description: "Self-hostable email engagement platform. Authenticate with `Authorization: Bearer <key>`: " +
      "the public key (pk_) on /v1/track only, the secret key (sk_) everywhere else. The dashboard uses the session " +
      "cookie (`mailstream_session`, from POST /auth/login) instead: on project resources together with an `X-Project-Id` " +
      "header, checked against the user's membership and role (OWNER, ADMIN, MEMBER); a project the user is not a member " +
      "of answers 404. Cookie-authenticated requests that change state must carry the dashboard's own `Origin` (403 " +
      "CSRF_REJECTED otherwise).\n\n" +
      "**Error shapes.** Every error is the envelope `{ success:false, error:{ code, message, statusCode, requestId, " +
      "errors?, details?, suggestion? }, timestamp }` (schemas `Error<status>`), with one exception kept from the " +
      "reference platform: a missing required field of `POST /contacts` (email), `POST /templates` (name, subject, " +
      "body, from) and `POST /segments` (name; condition for a DYNAMIC segment) answers 400 with the flat " +
      "`LegacyError` `{ error }`. Everything else those three endpoints refuse (malformed JSON, invalid values, an " +
      "unverified domain, ...) is the envelope too, as is a missing audience companion on `POST /campaigns` (400).\n\n" +
      "**Statuses.** Creating a resource answers 201 (contacts: 201 when created, 200 when an existing one was " +
      "updated); accepted work that runs later answers 202.\n\n" +
      "**Query parameters** are typed here as clients should send them; the service reads them leniently where the " +
      "spec says unrecognised values fall back to defaults (their descriptions say which)."
  }))
{}
