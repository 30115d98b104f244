/**
 * Upgrades: every migration applies to a database holding data, and follows the rolling-upgrade rule
 * (docs/operations.md: Upgrading) — old and new processes run side by side for a while, so a migration
 * only adds or relaxes. Migrations run one at a time through the real migrator over rows written after
 * each earlier one; after each, no table, column or row that existed is gone or changed, no column
 * became NOT NULL or changed type, and every earlier writer (the inserts of an older release) still
 * works. Generic over migrations/: a new file is checked the same way without changing this test.
 */
import { Effect } from "effect"
import { Migrator } from "effect/sql"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MIGRATIONS_TABLE, migrationFiles } from "../../src/store/db.ts"
import pg, { databaseUrlOf, withSql } from "../support/pg.ts"

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const database = `ms_test_upgrade_${randomUUID().slice(0, 8)}`
const url = databaseUrlOf(ADMIN_URL, database)
const q = <T = Record<string, unknown>>(text: string, params: Array<unknown> = []) => pg.query<T>(url, text, params)

beforeAll(async () => {
  await pg.exec(ADMIN_URL, `CREATE DATABASE ${database}`)
})
afterAll(async () => {
  await pg.close(url)
  await pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
})

const files = migrationFiles()

/** The real migrator, over the first `count` files: what a release that shipped them would run. */
const migrateThrough = (count: number) =>
  withSql(url, Migrator.make({})({ loader: Effect.succeed(files.slice(0, count)), table: MIGRATIONS_TABLE }))

/**
 * The second step of a removal, once no running release uses the thing any more: migration id → the
 * `table` or `table.column` it may drop. Everything else is held to adding or relaxing.
 */
const REMOVALS: ReadonlyMap<number, ReadonlyArray<string>> = new Map()

// ---------------------------------------------------------------------------------------- snapshots

interface Column {
  readonly table: string
  readonly column: string
  readonly nullable: boolean
  readonly type: string
}

const columns = async (): Promise<Array<Column>> =>
  (await q<{ table_name: string; column_name: string; is_nullable: string; udt_name: string; character_maximum_length: number | null }>(
    `SELECT table_name, column_name, is_nullable, udt_name, character_maximum_length
     FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> $1`,
    [MIGRATIONS_TABLE]
  )).map((row) => ({
    table: row.table_name,
    column: row.column_name,
    nullable: row.is_nullable === "YES",
    type: `${row.udt_name}${row.character_maximum_length ? `(${row.character_maximum_length})` : ""}`
  }))

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`

/** Row count and a digest of every row, over the given columns only (those an older release knows). */
const tableDigest = async (table: string, names: ReadonlyArray<string>) => {
  const [row] = await q<{ rows: number; digest: string }>(
    `SELECT count(*)::int AS rows, md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) AS digest
     FROM (SELECT ${names.map(ident).join(", ")} FROM ${ident(table)}) r`
  )
  return row!
}

const byTable = (list: ReadonlyArray<Column>) => {
  const tables = new Map<string, Array<Column>>()
  for (const column of list) tables.set(column.table, [...(tables.get(column.table) ?? []), column])
  return tables
}

// ----------------------------------------------------------------------------------------- fixtures

/**
 * Representative rows, written right after the migration with that number and again after every
 * later one, with the columns that release knew: an older process writing while a newer schema is in.
 */
const NOW = "now()"
const hex = () => randomUUID().replace(/-/g, "")

const insertProject = async () => {
  const id = randomUUID()
  await q(
    `INSERT INTO projects (id, name, public_key_hash, secret_key_hash) VALUES ($1, 'Upgrade', decode($2, 'hex'), decode($3, 'hex'))`,
    [id, hex(), hex()]
  )
  return id
}

const insertContact = async (projectId: string) => {
  const id = randomUUID()
  await q(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ($1, $2, $3, true, '{"plan":"pro"}', ${NOW}, ${NOW})`,
    [id, projectId, `${id}@example.org`]
  )
  return id
}

let partitionCounter = 1000
const fixtures: ReadonlyArray<readonly [migration: number, write: () => Promise<unknown>]> = [
  [1, async () => {
    const projectId = await insertProject()
    await insertContact(projectId)
    await q(`INSERT INTO contact_fields (project_id, key, type) VALUES ($1, 'plan', 'string')`, [projectId])
    await q(`INSERT INTO outbox (id, subject, payload) VALUES ($1, 'ms.in.0.x.contact', '{"type":"contact.created"}')`, [randomUUID()])
    await q(`INSERT INTO rate_limit_windows (project_id, window_start, count) VALUES ($1, date_trunc('minute', now()), 3)`, [projectId])
    await q(
      `INSERT INTO idempotency_keys (project_id, key, request, expires_at, status_code) VALUES ($1, 'done', 'POST /v1/track', now() + interval '1 day', 200)`,
      [projectId]
    )
    await q(
      `INSERT INTO idempotency_keys (project_id, key, request, expires_at) VALUES ($1, 'running', 'POST /v1/send', now() + interval '1 day')`,
      [projectId]
    )
  }],
  [2, async () => {
    const projectId = await insertProject()
    const contactId = await insertContact(projectId)
    const partition = partitionCounter++
    await q(`INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES ($1, $2, $3, 'signed_up', '{"n":1}', ${NOW})`, [
      randomUUID(),
      projectId,
      contactId
    ])
    await q(
      `INSERT INTO event_aggregates (project_id, contact_id, name, count, first_at, last_at) VALUES ($1, $2, 'signed_up', 1, ${NOW}, ${NOW})`,
      [projectId, contactId]
    )
    await q(`INSERT INTO partition_leases (partition, owner, epoch) VALUES ($1, 'worker-a', 3)`, [partition])
    await q(`INSERT INTO partition_state (partition, expires_at, applied_seq) VALUES ($1, now(), 42)`, [partition])
    await q(`INSERT INTO project_offsets (project_id, applied_seq) VALUES ($1, 42)`, [projectId])
    await q(`INSERT INTO workers (id, heartbeat_at) VALUES ($1, ${NOW})`, [`worker-${randomUUID()}`])
  }],
  [3, async () => {
    const projectId = await insertProject()
    await q(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, pinned_at, created_at, updated_at)
       VALUES ($1, $2, $3, false, '{}', '{"subscribed":1700000000000}', ${NOW}, ${NOW})`,
      [randomUUID(), projectId, `${randomUUID()}@example.org`]
    )
  }],
  [4, async () => {
    const projectId = await insertProject()
    const contactId = await insertContact(projectId)
    const segmentId = randomUUID()
    await q(
      `INSERT INTO segments (id, project_id, name, type, condition, track_membership, created_at, updated_at)
       VALUES ($1, $2, 'Pro', 'DYNAMIC', '{"logic":"AND","groups":[]}', true, ${NOW}, ${NOW})`,
      [segmentId, projectId]
    )
    await q(`INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at) VALUES ($1, $2, $3, ${NOW})`, [
      segmentId,
      contactId,
      projectId
    ])
    await q(`INSERT INTO timers (contact_id, id, project_id, partition, due_at) VALUES ($1, $2, $3, 0, now() + interval '1 day')`, [
      contactId,
      randomUUID(),
      projectId
    ])
  }],
  [5, async () => {
    await q(`INSERT INTO dead_letters (id, project_id, partition, seq, payload, error) VALUES ($1, $2, 0, 7, '{}', 'boom')`, [
      randomUUID(),
      randomUUID()
    ])
  }],
  [6, async () => {
    const projectId = await insertProject()
    await q(`UPDATE projects SET send_rate_per_second = 10, tracking_enabled = false WHERE id = $1`, [projectId])
    const contactId = await insertContact(projectId)
    await q(
      `INSERT INTO domains (id, project_id, domain, dkim_selector, dkim_private_key, dkim_public_key, records)
       VALUES ($1, $2, 'acme.test', 'ms1', 'private', 'public', '[]')`,
      [randomUUID(), projectId]
    )
    const templateId = randomUUID()
    await q(
      `INSERT INTO templates (id, project_id, name, subject, body, from_email, created_at, updated_at)
       VALUES ($1, $2, 'Welcome', 'Hi', '<p>Hi</p>', 'hello@acme.test', ${NOW}, ${NOW})`,
      [templateId, projectId]
    )
    await q(
      `INSERT INTO emails (id, project_id, partition, contact_id, to_email, from_email, subject, html, type, priority, template_id, message_id)
       VALUES ($1, $2, 0, $3, 'ada@example.org', 'hello@acme.test', 'Hi', '<p>Hi</p>', 'TRANSACTIONAL', 0, $4, $5)`,
      [randomUUID(), projectId, contactId, templateId, `<${randomUUID()}@acme.test>`]
    )
    await q(`INSERT INTO suppressions (project_id, email, reason) VALUES ($1, 'gone@example.org', 'bounce')`, [projectId])
    await q(`INSERT INTO webhook_receipts (provider, id) VALUES ('ses', $1)`, [randomUUID()])
  }],
  [7, async () => {
    const projectId = await insertProject()
    const contactId = await insertContact(projectId)
    const campaignId = randomUUID()
    await q(
      `INSERT INTO campaigns (id, project_id, partition, name, subject, body, from_email, audience_type, status, created_at, updated_at)
       VALUES ($1, $2, 0, 'News', 'News', '<p>n</p>', 'news@acme.test', 'ALL', 'SENDING', ${NOW}, ${NOW})`,
      [campaignId, projectId]
    )
    await q(`INSERT INTO campaign_recipients (campaign_id, contact_id) VALUES ($1, $2)`, [campaignId, contactId])
  }],
  [8, async () => {
    const projectId = await insertProject()
    const contactId = await insertContact(projectId)
    const [workflowId, triggerId, delayId, executionId] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()]
    await q(
      `INSERT INTO workflows (id, project_id, name, trigger_config, enabled, created_at, updated_at) VALUES ($1, $2, 'Onboarding', '{"eventName":"signed_up"}', true, ${NOW}, ${NOW})`,
      [workflowId, projectId]
    )
    await q(
      `INSERT INTO workflow_steps (id, workflow_id, type, name, config, created_at) VALUES ($1, $3, 'TRIGGER', 'Start', '{}', ${NOW}), ($2, $3, 'DELAY', 'Wait', '{"amount":1,"unit":"days"}', ${NOW})`,
      [triggerId, delayId, workflowId]
    )
    await q(`INSERT INTO workflow_transitions (id, workflow_id, from_step_id, to_step_id, created_at) VALUES ($1, $2, $3, $4, ${NOW})`, [
      randomUUID(),
      workflowId,
      triggerId,
      delayId
    ])
    await q(
      `INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, source_event_id, timer_id, started_at, updated_at)
       VALUES ($1, $2, $3, 0, $4, 'WAITING', $5, $6, $7, ${NOW}, ${NOW})`,
      [executionId, workflowId, projectId, contactId, delayId, randomUUID(), randomUUID()]
    )
    await q(
      `INSERT INTO workflow_step_executions (id, execution_id, step_id, step_type, project_id, partition, status, started_at)
       VALUES ($1, $2, $3, 'DELAY', $4, 0, 'WAITING', ${NOW})`,
      [randomUUID(), executionId, delayId, projectId]
    )
    await q(
      `INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at) VALUES ($1, $2, $3, 0, $4, now() + interval '1 day')`,
      [executionId, randomUUID(), projectId, delayId]
    )
  }],
  [9, async () => {
    await q(
      `INSERT INTO dead_letters (id, project_id, payload, error, source, subject) VALUES ($1, $2, '{}', 'too large', 'outbox', 'ms.in.0.x.contact')`,
      [randomUUID(), randomUUID()]
    )
    await q(`INSERT INTO outbox (id, subject, payload, attempts) VALUES ($1, 'ms.in.0.x.contact', '{}', 2)`, [randomUUID()])
  }],
  [11, async () => {
    const projectId = await insertProject()
    await q(
      `INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, type, priority, message_id, status, open_recorded_at)
       VALUES ($1, $2, 0, 'ada@example.org', 'hello@acme.test', 'Hi', '<p>Hi</p>', 'TRANSACTIONAL', 0, $3, 'OPENED', ${NOW})`,
      [randomUUID(), projectId, `<${randomUUID()}@acme.test>`]
    )
    await q(
      `INSERT INTO idempotency_keys (project_id, key, request, expires_at, operation_id, claim_token, locked_until)
       VALUES ($1, 'claimed', 'POST /v1/track', now() + interval '1 day', $2, $3, now() + interval '30 seconds')`,
      [projectId, randomUUID(), randomUUID()]
    )
  }]
]

/** The last migration the fixtures were written for: every table existing after it has rows. */
const FIXTURES_THROUGH = Math.max(...fixtures.map(([migration]) => migration))

// -------------------------------------------------------------------------------------------- tests

describe("migrations on a database holding data", () => {
  let applied: Array<number> = []
  const tablesWithFixtures = new Set<string>()

  files.forEach(([id, name], index) => {
    it(`${String(id).padStart(4, "0")}_${name} applies over the data, only adding or relaxing`, async () => {
      const removed = REMOVALS.get(id) ?? []
      const isRemoved = (column: Column) => removed.includes(column.table) || removed.includes(`${column.table}.${column.column}`)
      const before = (await columns()).filter((column) => !isRemoved(column))
      const tables = byTable(before)
      const digests = new Map(
        await Promise.all([...tables].map(async ([table, list]) => [table, await tableDigest(table, list.map((c) => c.column))] as const))
      )

      const ran = await migrateThrough(index + 1)
      expect(ran.map(([ranId]) => ranId), "the migrator applied exactly this file").toEqual([id])
      applied = [...applied, id]

      const schema = await columns()
      if (id <= FIXTURES_THROUGH) { for (const column of schema) tablesWithFixtures.add(column.table) }
      const after = new Map(schema.map((column) => [`${column.table}.${column.column}`, column]))
      for (const old of before) {
        const current = after.get(`${old.table}.${old.column}`)
        expect(current, `${old.table}.${old.column} was dropped or renamed`).toBeDefined()
        expect(current!.type, `${old.table}.${old.column} changed type`).toBe(old.type)
        if (old.nullable) expect(current!.nullable, `${old.table}.${old.column} became NOT NULL`).toBe(true)
      }
      // Every row survives with the values an older release reads.
      for (const [table, list] of tables) {
        expect(await tableDigest(table, list.map((c) => c.column)), `rows of ${table}`).toEqual(digests.get(table))
      }
      // Older writers keep working against the new schema, and this release's rows go in.
      for (const [migration, write] of fixtures) {
        if (applied.includes(migration)) await write()
      }
    })
  })

  it("recorded every file, and rows fill every table the fixtures were written for", async () => {
    const recorded = await q<{ migration_id: number }>(`SELECT migration_id FROM ${MIGRATIONS_TABLE} ORDER BY migration_id`)
    expect(recorded.map((row) => row.migration_id)).toEqual(files.map(([id]) => id))
    // Tables of later migrations are held to survival once a fixture writes them.
    const empty = []
    for (const table of tablesWithFixtures) {
      const [row] = await q<{ rows: number }>(`SELECT count(*)::int AS rows FROM ${ident(table)}`)
      if (row!.rows === 0) empty.push(table)
    }
    expect(tablesWithFixtures.size).toBeGreaterThan(20)
    expect(empty).toEqual([])
  })
})
