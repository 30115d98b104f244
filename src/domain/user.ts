/** A person signed in to the dashboard (the session's user), as the HTTP layer sees them. */
export interface User {
  readonly id: string
  readonly email: string
  readonly emailVerified: boolean
  readonly hasPassword: boolean
  readonly createdAt: Date
}

/** The signed-in user and the session row their cookie names. */
export interface SessionUser {
  readonly user: User
  readonly sessionId: string
}
