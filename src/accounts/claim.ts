/**
 * Taking over an account whose email was never verified. Whoever chose its password never proved the
 * address; someone who proves it without that password (the reset link mailed to it) gets the address,
 * not what the holder left behind: every session, outstanding link and linked sign-in of the account
 * ends, and it leaves every project it was in (the holder saw those projects' keys and may still be in
 * them under another account). The projects themselves stay, with their other members. The
 * installation's first user keeps theirs: whoever is first owns the installation anyway.
 */
import { Effect } from "effect"
import type { AccountTokens } from "../store/AccountTokens.ts"
import type { Members } from "../store/Members.ts"
import type { Users } from "../store/Users.ts"

interface ClaimStores {
  readonly users: Users["Service"]
  readonly tokens: AccountTokens["Service"]
  readonly members: Members["Service"]
}

/** How many projects a takeover would take the account out of. */
export const projectsLostOnClaim = (stores: ClaimStores, userId: string) =>
  Effect.gen(function*() {
    if (yield* stores.users.isFirst(userId)) return 0
    return (yield* stores.members.projectsOf(userId)).length
  })

/** Ends everything the unverified account's holder had (run it in the caller's transaction). */
export const claimUnverifiedAccount = (stores: ClaimStores, userId: string) =>
  Effect.gen(function*() {
    yield* stores.users.revokeAllSessions(userId)
    yield* stores.tokens.spendAll(userId, ["verify_email", "reset_password"])
    yield* stores.users.unlinkIdentities(userId)
    const left = (yield* stores.users.isFirst(userId)) ? 0 : yield* stores.members.leaveAll(userId)
    yield* Effect.logInfo("unverified account taken over by its email's owner", { userId, projectsLeft: left })
    return left
  })
