/**
 * What segments read about a batch's contacts (aggregates, windowed event times, memberships) is read
 * per contact through each table's index, however many contacts the batch has: the planner once
 * traded the lookups for a hash join over the project's whole membership table as batches grew past
 * ~200 contacts (~130 ms instead of ~1 under load). Here a project holds 10,000 contacts in 30
 * segments each; a read of 400 of them must plan no sequential scan, and return exactly their facts.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { loadFacts } from "../../src/actors/segmentFacts.ts"
import { factRowsSql } from "../../src/store/engine/facts.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { pgArray } from "../../src/lib/pgArray.ts"
import { insertProject, TestDatabase } from "../support/database.ts"

const CONTACTS = 10_000
const SEGMENTS = 30
const READ = 400
const HOUR = 3_600_000
const DAY = 24 * HOUR

/** A project with CONTACTS contacts, each a member of every one of SEGMENTS segments, with two aggregates and three clicks each. */
const fillProject = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
      SELECT gen_random_uuid(), ${projectId}, 'user' || n || '@facts.test', true, now(), now() FROM generate_series(1, ${CONTACTS}) n`
    yield* sql`
      INSERT INTO segments (id, project_id, name, type, condition, created_at, updated_at)
      SELECT gen_random_uuid(), ${projectId}, 'segment ' || n, 'DYNAMIC', '{"logic":"AND","groups":[]}', now(), now() FROM generate_series(1, ${SEGMENTS}) n`
    yield* sql`
      INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at)
      SELECT s.id, c.id, ${projectId}, now() FROM segments s CROSS JOIN contacts c
      WHERE s.project_id = ${projectId} AND c.project_id = ${projectId}`
    yield* sql`
      INSERT INTO event_aggregates (project_id, contact_id, name, count, first_at, last_at)
      SELECT ${projectId}, c.id, e.name, 3, now() - interval '1 hour', now() FROM contacts c CROSS JOIN (VALUES ('click'), ('page_view')) e(name)
      WHERE c.project_id = ${projectId}`
    yield* sql`
      INSERT INTO events (id, project_id, contact_id, name, created_at)
      SELECT gen_random_uuid(), ${projectId}, c.id, 'click', now() - n * interval '1 minute' FROM contacts c CROSS JOIN generate_series(1, 3) n
      WHERE c.project_id = ${projectId}`
    yield* sql`ANALYZE contacts, segments, segment_memberships, event_aggregates, events`
    return yield* sql<{ id: string }>`SELECT id FROM contacts WHERE project_id = ${projectId} ORDER BY email LIMIT ${READ}`
  })

/** The plan of the fact rows for these contacts, as Postgres' JSON plan: every node's type and relation. */
const planOf = (projectId: string, contactIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ "QUERY PLAN": unknown }>`
      EXPLAIN (FORMAT JSON)
      SELECT 'c'::text, NULL::uuid, NULL::text, NULL::bigint, NULL::float8, NULL::float8, NULL::boolean, NULL::jsonb, NULL::jsonb WHERE false
      UNION ALL
      ${
      factRowsSql(
        sql,
        projectId,
        sql`unnest(${pgArray(contactIds)}::uuid[])`,
        true,
        new Set(["click", "page_view"]),
        new Set(["click"]),
        Date.now() - HOUR
      )
    }`
    const nodes: Array<{ type: string; relation?: string }> = []
    const visit = (node: Record<string, unknown>) => {
      nodes.push({ type: String(node["Node Type"]), ...(node["Relation Name"] ? { relation: String(node["Relation Name"]) } : {}) })
      for (const child of (node["Plans"] as Array<Record<string, unknown>> | undefined) ?? []) visit(child)
    }
    const plan = row!["QUERY PLAN"]
    visit(((typeof plan === "string" ? JSON.parse(plan) : plan) as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan)
    return nodes
  })

layer(TestDatabase, { timeout: 120_000 })("fact reads", (it) => {
  describe("for a batch of hundreds of contacts in a big project", () => {
    it.effect("read each table through its index, never a scan of the whole table", () =>
      Effect.gen(function*() {
        const projectId = yield* insertProject
        const contacts = yield* fillProject(projectId)
        const nodes = yield* planOf(projectId, contacts.map((contact) => contact.id))
        const scanned = nodes.filter((node) => node.type === "Seq Scan").map((node) => node.relation)
        expect(scanned).toEqual([])
        const read = new Set(nodes.filter((node) => node.relation !== undefined).map((node) => node.relation))
        expect([...read].sort()).toEqual(["event_aggregates", "events", "segment_memberships"])
      }))

    it.effect("return exactly those contacts' facts: current memberships, their aggregates, their windowed times", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const projectId = yield* insertProject
        const contacts = yield* fillProject(projectId)
        const [first, second] = contacts
        // One membership exited, one aggregate and one click of another project's contact with the same id space.
        const [segment] = yield* sql<{ id: string }>`SELECT id FROM segments WHERE project_id = ${projectId} ORDER BY name LIMIT 1`
        yield* sql`UPDATE segment_memberships SET exited_at = now() WHERE segment_id = ${segment!.id} AND contact_id = ${first!.id}`
        const otherProject = yield* insertProject
        yield* sql`
          INSERT INTO event_aggregates (project_id, contact_id, name, count, first_at, last_at)
          VALUES (${otherProject}, ${first!.id}, 'click', 99, now(), now())`
        yield* sql`INSERT INTO events (id, project_id, contact_id, name, created_at) VALUES (${uuidv7()}, ${otherProject}, ${
          first!.id
        }, 'click', now())`

        const facts = yield* loadFacts(projectId, [first!.id, second!.id], new Set(["click"]), new Set(["click"]))
        const one = facts.get(first!.id)!
        const two = facts.get(second!.id)!
        assert.strictEqual(facts.size, 2)
        expect(one.memberships.size).toBe(SEGMENTS - 1)
        expect(one.memberships.has(segment!.id)).toBe(false)
        expect(two.memberships.size).toBe(SEGMENTS)
        expect(one.events.get("click")?.count).toBe(3)
        expect(one.events.has("page_view")).toBe(false)
        const times = one.eventTimes.get("click")!
        expect(times).toHaveLength(3)
        // Newest first, as the windowed counts read them.
        expect([...times].sort((x, y) => y - x)).toEqual(times)
      }))
  })

  describe("for a contact with a long history", () => {
    it.effect("read only the occurrences the longest window can still count, however many older ones there are", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const projectId = yield* insertProject
        const contactId = uuidv7()
        yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
                   VALUES (${contactId}, ${projectId}, 'long@facts.test', true, now(), now())`
        // 5,000 clicks two to three days ago, then three in the last hour.
        yield* sql`
          INSERT INTO events (id, project_id, contact_id, name, created_at)
          SELECT gen_random_uuid(), ${projectId}, ${contactId}, 'click', now() - interval '2 days' - n * interval '1 second'
          FROM generate_series(1, 5000) n`
        yield* sql`
          INSERT INTO events (id, project_id, contact_id, name, created_at)
          SELECT gen_random_uuid(), ${projectId}, ${contactId}, 'click', now() - n * interval '10 minutes' FROM generate_series(1, 3) n`
        yield* sql`ANALYZE events`
        const now = Date.now()
        const clicks = (since: number | undefined) =>
          Effect.map(
            loadFacts(projectId, [contactId], new Set(["click"]), new Set(["click"]), since),
            (facts) => facts.get(contactId)!.eventTimes.get("click") ?? []
          )

        // A window of an hour evaluated now: the three recent clicks.
        const lastHour = yield* clicks(now - HOUR)
        expect(lastHour).toHaveLength(3)
        expect(lastHour.every((at) => at > now - HOUR)).toBe(true)
        // Evaluated at a late timer's due time three days back, the window reaches the old ones.
        expect(yield* clicks(now - 3 * DAY - HOUR)).toHaveLength(5003)
        expect(yield* clicks(undefined)).toHaveLength(5003)

        // Bounded through the index, not by filtering the contact's whole history.
        const [plan] = yield* sql<{ "QUERY PLAN": unknown }>`
          EXPLAIN (ANALYZE, FORMAT JSON)
          SELECT 'c'::text, NULL::uuid, NULL::text, NULL::bigint, NULL::float8, NULL::float8, NULL::boolean, NULL::jsonb, NULL::jsonb WHERE false
          UNION ALL
          ${
          factRowsSql(
            sql,
            projectId,
            sql`unnest(${pgArray([contactId])}::uuid[])`,
            true,
            new Set(["click"]),
            new Set(["click"]),
            now - HOUR
          )
        }`
        const rowsOfEvents: Array<number> = []
        const visit = (node: Record<string, unknown>) => {
          if (node["Relation Name"] === "events")
            rowsOfEvents.push(Number(node["Actual Rows"]) + Number(node["Rows Removed by Filter"] ?? 0))
          for (const child of (node["Plans"] as Array<Record<string, unknown>> | undefined) ?? []) visit(child)
        }
        const json = plan!["QUERY PLAN"]
        visit(((typeof json === "string" ? JSON.parse(json) : json) as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan)
        expect(rowsOfEvents).toEqual([3])
      }))
  })
})
