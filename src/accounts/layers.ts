/** What the dashboard's accounts need on the api: its stores and services, over the core layers. */
import { Layer } from "effect"
import { MailTransport } from "../mail/Transport.ts"
import { AccountTokens } from "../store/AccountTokens.ts"
import { Billing } from "../store/Billing.ts"
import { LoginThrottle } from "../store/LoginThrottle.ts"
import { Members } from "../store/Members.ts"
import { PlatformMailQueue } from "../store/PlatformMailQueue.ts"
import { ProjectCacheInvalidation } from "../store/ProjectCacheInvalidation.ts"
import { ProjectData } from "../store/ProjectData.ts"
import { ProjectHealth } from "../store/ProjectHealth.ts"
import { Uploads } from "../store/Uploads.ts"
import { Users } from "../store/Users.ts"
import { OAuth } from "./OAuth.ts"
import { PlatformMail } from "./PlatformMail.ts"
import { SessionCookie } from "./SessionCookie.ts"
import { StripeBilling } from "./StripeBilling.ts"

const Stores = Layer.mergeAll(
  Users.layer,
  AccountTokens.layer,
  LoginThrottle.layer,
  Members.layer,
  ProjectCacheInvalidation.layer,
  ProjectData.layer,
  ProjectHealth.layer,
  Uploads.layer,
  Billing.layer,
  PlatformMailQueue.layer
)

export const AccountsLive = Layer.mergeAll(
  SessionCookie.layer,
  OAuth.layer,
  PlatformMail.layer.pipe(Layer.provide(MailTransport.layer)),
  StripeBilling.layer
).pipe(Layer.provideMerge(Stores))
