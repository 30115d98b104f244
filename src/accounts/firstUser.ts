/**
 * The first user of an empty installation owns what exists: every project created before anyone
 * signed up (with the CLI), or else a first project made for them.
 */
import { Effect } from "effect"
import type { Members } from "../store/Members.ts"
import type { Projects } from "../store/Projects.ts"

export const FIRST_PROJECT_NAME = "My first project"

export const settleFirstUser = (members: Members["Service"], projects: Projects["Service"], userId: string) =>
  Effect.gen(function*() {
    if ((yield* members.adoptOrphans(userId)) > 0) return
    const project = yield* projects.create(FIRST_PROJECT_NAME)
    yield* members.add(project.id, userId, "OWNER")
  })
