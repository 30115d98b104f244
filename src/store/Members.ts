/**
 * Who belongs to which project, with which role. The last OWNER of a project can neither leave nor
 * be demoted: changes that would leave a project without an owner are refused (LastOwner), checked
 * under a lock on the project's member rows so two concurrent demotions cannot both pass.
 */
import { Context, Data, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type Role, Roles } from "../domain/permissions.ts"
import { decodeRows } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface Member {
  readonly userId: string
  readonly email: string
  readonly role: Role
  readonly joinedAt: Date
}

export interface Membership {
  readonly projectId: string
  readonly name: string
  readonly role: Role
  readonly disabled: boolean
  readonly createdAt: Date
}

const RoleColumn = Schema.Literals(Roles)
const MemberRoleRow = Schema.Struct({ user_id: Schema.String, role: RoleColumn })
const RoleRow = Schema.Struct({ role: RoleColumn })
/** Member and Membership keep the driver's Dates, as Users does (their readers format them). */
const MemberRow = Schema.Struct({ user_id: Schema.String, email: Schema.String, role: RoleColumn, created_at: Schema.Date })
const MembershipRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  role: RoleColumn,
  disabled: Schema.Boolean,
  created_at: Schema.Date
})
/** Statements that only say how many rows they touched. */
const ProjectIdRow = Schema.Struct({ project_id: Schema.String })
const touched = decodeRows(ProjectIdRow)

export class LastOwner extends Data.TaggedError("LastOwner") {}

export class Members extends Context.Service<Members, {
  readonly roleOf: (projectId: string, userId: string) => Effect.Effect<Role | undefined, PersistenceError>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<Member>, PersistenceError>
  readonly projectsOf: (userId: string) => Effect.Effect<ReadonlyArray<Membership>, PersistenceError>
  /** Adds the user (or changes nothing when they already belong to the project). */
  readonly add: (projectId: string, userId: string, role: Role) => Effect.Effect<void, PersistenceError>
  /** false when the user is not a member. */
  readonly changeRole: (projectId: string, userId: string, role: Role) => Effect.Effect<boolean, LastOwner | PersistenceError>
  readonly remove: (projectId: string, userId: string) => Effect.Effect<boolean, LastOwner | PersistenceError>
  /**
   * Takes the user out of every project, owner or not (the last owner too): for an account whose holder
   * never proved its email, taken over by the one who did (src/accounts/claim.ts). Answers how many.
   */
  readonly leaveAll: (userId: string) => Effect.Effect<number, PersistenceError>
  /** Makes the user OWNER of every project nobody belongs to (created with the CLI before any user existed). */
  readonly adoptOrphans: (userId: string) => Effect.Effect<number, PersistenceError>
}>()("app/store/Members") {
  static readonly layer = Layer.effect(
    Members,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** Runs `change` unless it would leave the project without an owner. */
      const guardOwners = <A>(
        projectId: string,
        userId: string,
        change: Effect.Effect<A, SqlError.SqlError | Schema.SchemaError>,
        demotes: boolean
      ) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = yield* decodeRows(MemberRoleRow)(sql`
            SELECT user_id, role FROM project_members WHERE project_id = ${projectId} ORDER BY user_id FOR UPDATE`)
          const target = rows.find((row) => row.user_id === userId)
          if (!target) return undefined
          const owners = rows.filter((row) => row.role === "OWNER").length
          if (demotes && target.role === "OWNER" && owners === 1) return yield* Effect.fail(new LastOwner())
          return yield* change
        })).pipe(mapSqlError)

      const adoptOrphans = (userId: string) =>
        touched(sql`INSERT INTO project_members (project_id, user_id, role)
            SELECT p.id, ${userId}, 'OWNER' FROM projects p
            WHERE NOT EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id)
            ON CONFLICT DO NOTHING
            RETURNING project_id`).pipe(Effect.map((rows) => rows.length), mapSqlError)

      return Members.of({
        adoptOrphans,
        roleOf: (projectId, userId) =>
          decodeRows(RoleRow)(sql`SELECT role FROM project_members WHERE project_id = ${projectId} AND user_id = ${userId}`).pipe(
            Effect.map((rows) => rows[0]?.role),
            mapSqlError
          ),
        list: (projectId) =>
          decodeRows(MemberRow)(sql`
            SELECT m.user_id, u.email, m.role, m.created_at FROM project_members m JOIN users u ON u.id = m.user_id
            WHERE m.project_id = ${projectId} ORDER BY m.created_at, m.user_id`).pipe(
            Effect.map((rows) => rows.map((row) => ({ userId: row.user_id, email: row.email, role: row.role, joinedAt: row.created_at }))),
            mapSqlError
          ),
        projectsOf: (userId) =>
          decodeRows(MembershipRow)(sql`
            SELECT p.id, p.name, m.role, p.disabled, p.created_at FROM project_members m JOIN projects p ON p.id = m.project_id
            WHERE m.user_id = ${userId} ORDER BY p.created_at, p.id`).pipe(
            Effect.map((rows) =>
              rows.map((row) => ({ projectId: row.id, name: row.name, role: row.role, disabled: row.disabled, createdAt: row.created_at }))
            ),
            mapSqlError
          ),
        add: (projectId, userId, role) =>
          sql`INSERT INTO project_members (project_id, user_id, role) VALUES (${projectId}, ${userId}, ${role})
              ON CONFLICT (project_id, user_id) DO NOTHING`.pipe(Effect.asVoid, mapSqlError),
        changeRole: (projectId, userId, role) =>
          guardOwners(
            projectId,
            userId,
            sql`UPDATE project_members SET role = ${role} WHERE project_id = ${projectId} AND user_id = ${userId}`.pipe(Effect.as(true)),
            role !== "OWNER"
          ).pipe(Effect.map((changed) => changed === true)),
        remove: (projectId, userId) =>
          guardOwners(
            projectId,
            userId,
            sql`DELETE FROM project_members WHERE project_id = ${projectId} AND user_id = ${userId}`.pipe(Effect.as(true)),
            true
          ).pipe(Effect.map((removed) => removed === true)),
        leaveAll: (userId) =>
          touched(sql`DELETE FROM project_members WHERE user_id = ${userId} RETURNING project_id`).pipe(
            Effect.map((rows) => rows.length),
            mapSqlError
          )
      })
    })
  )
}
