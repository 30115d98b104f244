/** Sending domains of a project: DKIM keys, the records to publish, and their verification by DNS. */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { DomainExists } from "../domain/errors.ts"
import { DomainId, ProjectId } from "../domain/identifiers.ts"
import { uuidv7 } from "../domain/ids.ts"
import { AppConfig } from "../config.ts"
import { Dns } from "../lib/dns.ts"
import { isolateRow } from "../lib/isolation.ts"
import { type DnsRecord, type DomainStatus, domainStatus, generateDkimKeys, recordsFor, recordStatus } from "./domainRecords.ts"
import { NullableTimestamp, Timestamp } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface Domain {
  readonly id: DomainId
  readonly domain: string
  readonly verified: boolean
  readonly status: DomainStatus
  readonly records: ReadonlyArray<DnsRecord>
  readonly createdAt: string
  readonly lastCheckedAt: string | null
}

/** What signing needs of a verified domain. */
export interface SigningKey {
  readonly domain: string
  readonly selector: string
  readonly privateKey: string
}

const DomainStatusSchema = Schema.Literals(["PENDING", "VERIFIED", "FAILED"])

const DnsRecordSchema = Schema.Struct({
  purpose: Schema.Literals(["DKIM", "SPF", "DMARC"]),
  type: Schema.Literal("TXT"),
  name: Schema.String,
  value: Schema.String,
  status: Schema.Literals(["VERIFIED", "MISSING", "MISMATCH", "UNKNOWN"]),
  required: Schema.Boolean
})

/** A `domains` row as COLUMNS select it (the DKIM key columns are read by signingKey alone). */
const DomainRow = Schema.Struct({
  id: DomainId,
  project_id: ProjectId,
  domain: Schema.String,
  status: DomainStatusSchema,
  records: Schema.Array(DnsRecordSchema),
  created_at: Timestamp,
  last_checked_at: NullableTimestamp
})
type DomainRow = typeof DomainRow.Type

const COLUMNS = "id, project_id, domain, status, records, created_at, last_checked_at"

const toDomain = (row: DomainRow): Domain => ({
  id: row.id,
  domain: row.domain,
  verified: row.status === "VERIFIED",
  status: row.status,
  records: row.records,
  createdAt: row.created_at,
  lastCheckedAt: row.last_checked_at
})

const SigningKeyRow = Schema.Struct({ domain: Schema.String, dkim_selector: Schema.String, dkim_private_key: Schema.String })

export class Domains extends Context.Service<Domains, {
  readonly create: (projectId: string, domain: string) => Effect.Effect<Domain, DomainExists | PersistenceError>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<Domain>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Domain | undefined, PersistenceError>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  /** Looks the domain's records up now and stores what was found. */
  readonly check: (projectId: string, id: string) => Effect.Effect<Domain | undefined, PersistenceError>
  /** Checks the domains whose last check is older than DOMAIN_RECHECK_SECONDS. */
  readonly checkDue: (limit: number) => Effect.Effect<number, PersistenceError>
  /** The signing key of the project's verified domain of that name. */
  readonly signingKey: (projectId: string, domain: string) => Effect.Effect<SigningKey | undefined, PersistenceError>
}>()("app/store/Domains") {
  static readonly layer = Layer.effect(
    Domains,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const dns = yield* Dns
      const recheckSeconds = (yield* AppConfig).domainRecheckSeconds
      const decodeRows = Schema.decodeUnknownEffect(Schema.Array(DomainRow))

      const insert = SqlSchema.findAll({
        Request: Schema.Struct({ projectId: Schema.String, domain: Schema.String }),
        Result: DomainRow,
        execute: ({ domain, projectId }) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const keys = yield* Effect.promise(() => generateDkimKeys(now))
            return yield* sql`
              INSERT INTO domains (id, project_id, domain, dkim_selector, dkim_private_key, dkim_public_key, records)
              VALUES (${uuidv7()}, ${projectId}, ${domain}, ${keys.selector}, ${keys.privateKey}, ${keys.publicKey},
                      ${JSON.stringify(recordsFor(domain, keys))}::jsonb)
              ON CONFLICT (project_id, domain) DO NOTHING
              RETURNING ${sql.literal(COLUMNS)}`
          })
      })

      const byProject = SqlSchema.findAll({
        Request: Schema.String,
        Result: DomainRow,
        execute: (projectId) => sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE project_id = ${projectId} ORDER BY domain`
      })

      const byId = SqlSchema.findAll({
        Request: Schema.Struct({ projectId: Schema.String, id: Schema.String }),
        Result: DomainRow,
        execute: ({ id, projectId }) => sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE project_id = ${projectId} AND id = ${id}`
      })

      const create = Effect.fn("Domains.create")(function*(projectId: string, domain: string) {
        const [row] = yield* insert({ projectId, domain })
        if (!row) return yield* DomainExists.of(domain)
        return toDomain(row)
      }, mapSqlError)

      const list = Effect.fn("Domains.list")(function*(projectId: string) {
        return (yield* byProject(projectId)).map(toDomain)
      }, mapSqlError)

      const get = Effect.fn("Domains.get")(function*(projectId: string, id: string) {
        const [row] = yield* byId({ projectId, id })
        return row ? toDomain(row) : undefined
      }, mapSqlError)

      const remove = Effect.fn("Domains.remove")(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM domains WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, mapSqlError)

      const recheck = Effect.fnUntraced(function*(row: DomainRow) {
        const records = yield* Effect.forEach(
          row.records,
          (record) => Effect.map(dns.txt(record.name), (answer) => ({ ...record, status: recordStatus(record, answer) })),
          {
            concurrency: "unbounded"
          }
        )
        const status = domainStatus(row.status, records)
        const updated = yield* sql`
          UPDATE domains SET records = ${
          JSON.stringify(records)
        }::jsonb, status = ${status}, last_checked_at = now(), last_check_error = NULL,
                 verified_at = CASE WHEN ${status} = 'VERIFIED' THEN COALESCE(verified_at, now()) ELSE NULL END
          WHERE id = ${row.id}
          RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeRows))
        return updated[0] ? toDomain(updated[0]) : undefined
      })

      const check = Effect.fn("Domains.check")(function*(projectId: string, id: string) {
        const [row] = yield* byId({ projectId, id })
        return row ? yield* recheck(row) : undefined
      }, mapSqlError)

      const checkDue = Effect.fn("Domains.checkDue")(function*(limit: number) {
        // Claimed by moving last_checked_at forward first, so concurrent workers check each domain once.
        const rows = yield* sql`
          UPDATE domains SET last_checked_at = now()
          WHERE id IN (
            SELECT id FROM domains
            WHERE last_checked_at IS NULL OR last_checked_at < now() - make_interval(secs => ${recheckSeconds})
            ORDER BY last_checked_at NULLS FIRST LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
          RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeRows))
        // A domain whose check cannot run keeps its status, with the reason; the others are checked.
        yield* Effect.forEach(rows, (row) =>
          isolateRow(
            "domain re-check",
            { projectId: row.project_id, domainId: row.id },
            recheck(row),
            (reason) => sql`UPDATE domains SET last_check_error = ${reason} WHERE id = ${row.id}`
          ), { concurrency: 8, discard: true })
        return rows.length
      }, mapSqlError)

      const signingKeyRows = SqlSchema.findAll({
        Request: Schema.Struct({ projectId: Schema.String, domain: Schema.String }),
        Result: SigningKeyRow,
        execute: ({ domain, projectId }) =>
          sql`SELECT domain, dkim_selector, dkim_private_key FROM domains
              WHERE project_id = ${projectId} AND domain = ${domain} AND status = 'VERIFIED'`
      })

      const signingKey = Effect.fn("Domains.signingKey")(function*(projectId: string, domain: string) {
        const [row] = yield* signingKeyRows({ projectId, domain })
        return row ? { domain: row.domain, selector: row.dkim_selector, privateKey: row.dkim_private_key } : undefined
      }, mapSqlError)

      return Domains.of({ create, list, get, remove, check, checkDue, signingKey })
    })
  )
}
