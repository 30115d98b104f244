/**
 * The mail a password reset request turns into, decided off the request path (PlatformMail's loop): no
 * account or a link mailed in the last minute means no mail. An account whose email was never verified
 * is told what the link will do to it (src/accounts/claim.ts), so someone who created it and still knows
 * its password can verify instead.
 */
import { Effect } from "effect"
import type { AccountTokens } from "../store/AccountTokens.ts"
import type { Members } from "../store/Members.ts"
import type { PlatformMessage } from "../store/PlatformMailQueue.ts"
import type { Users } from "../store/Users.ts"
import { projectsLostOnClaim } from "./claim.ts"

export interface ResetStores {
  readonly users: Users["Service"]
  readonly tokens: AccountTokens["Service"]
  readonly members: Members["Service"]
}

export const passwordResetMessage = (stores: ResetStores, link: (path: string, token: string) => string, email: string) =>
  Effect.gen(function*() {
    const user = yield* stores.users.byEmail(email)
    if (!user || (yield* stores.tokens.cooldown("reset_password", user.email)) !== undefined) return undefined
    const token = yield* stores.tokens.issue("reset_password", { userId: user.id, email: user.email, projectId: null, role: null })
    const projects = user.emailVerified ? 0 : yield* projectsLostOnClaim(stores, user.id)
    const warning = user.emailVerified ?
      "" :
      "\n\nThis account's email address was never verified, so it may have been created by someone else with your " +
      "address. A password set through this link signs everyone out of it" +
      (projects > 0 ? ` and takes it out of its ${projects === 1 ? "project" : `${projects} projects`}` : "") +
      ". If you created the account and know its password, sign in and verify your email instead."
    return {
      to: user.email,
      subject: "Reset your password",
      text: `Open this link to choose a new password (valid for 1 hour):\n${link("/reset-password", token)}\n\n` +
        `If you did not ask for it, ignore this message.${warning}`
    } satisfies PlatformMessage
  })
