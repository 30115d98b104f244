/** Segment definitions and reads of their members. Membership changes are the actor's (actors/segments.ts). */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
import type { Condition } from "../domain/conditions/types.ts"
import { segmentSlug } from "../domain/events.ts"
import { uuidv7 } from "../domain/ids.ts"
import { pgArray } from "../lib/pgArray.ts"
import { Outbox, type OutboxRow } from "../stream/Outbox.ts"
import { compileConditionSql, segmentMembersSql } from "./conditionSql.ts"
import { CountRow, decodeRows, IdRow } from "./columns.ts"
import { type Contact, CONTACT_COLUMNS_C, ContactRow, toContact } from "./contactRecords.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { type Segment, SEGMENT_COLUMNS, segmentOf, SegmentRow, type SegmentType } from "./segmentRecords.ts"

export { type Segment, type SegmentType, toSegment } from "./segmentRecords.ts"

const CountsRow = Schema.Struct({ total: Schema.Number, reachable: Schema.Number })
const MemberRow = Schema.Struct({ id: Schema.String, email: Schema.String })
const EnteredRow = Schema.Struct({ contact_id: Schema.String })
const EmailRow = Schema.Struct({ email: Schema.String })
const PageRow = Schema.Struct({ ...ContactRow.fields, total: Schema.Number })
const InProject = Schema.Struct({ projectId: Schema.String, id: Schema.String })

/** `segment.<slug>.entry`: defined with the other emitted names (the dashboard names them too). */
export { segmentSlug }

export class Segments extends Context.Service<Segments, {
  readonly create: (projectId: string, input: {
    readonly name: string
    readonly description: string | null
    readonly type: SegmentType
    readonly condition: Condition | null
    readonly trackMembership: boolean
  }) => Effect.Effect<Segment, PersistenceError>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<Segment>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Segment | undefined, PersistenceError>
  readonly update: (projectId: string, id: string, input: {
    readonly name?: string | undefined
    readonly description?: string | null | undefined
    readonly condition?: Condition | undefined
    readonly trackMembership?: boolean | undefined
  }) => Effect.Effect<Segment | undefined, PersistenceError>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  /** SQL over `contacts c`: the contact is a current member (as `contacts` lists them). */
  readonly membersSql: (segment: Segment) => Statement.Fragment
  /** Current members: live (the condition, now) for dynamic segments, the stored list for static ones. */
  readonly contacts: (segment: Segment, page: number, pageSize: number) => Effect.Effect<
    { readonly data: ReadonlyArray<Contact>; readonly total: number },
    PersistenceError
  >
  /** Static segments: adds members by email (creating missing contacts when asked); entry events when tracked. */
  readonly addMembers: (segment: Segment, emails: ReadonlyArray<string>, options: {
    readonly createMissing: boolean
    readonly subscribed: boolean | undefined
  }) => Effect.Effect<{ readonly added: number; readonly created: number; readonly notFound: ReadonlyArray<string> }, PersistenceError>
  readonly removeMembers: (segment: Segment, emails: ReadonlyArray<string>) => Effect.Effect<
    { readonly removed: number; readonly notFound: ReadonlyArray<string> },
    PersistenceError
  >
  /** Asks the project's actor to recompute a dynamic segment and emit entry/exit. */
  readonly requestCompute: (segment: Segment) => Effect.Effect<void, PersistenceError>
  /**
   * Without writing anything: how many contacts match now (a condition, a segment's members, or all
   * contacts when given neither), how many of them a marketing campaign would mail, and a sample.
   */
  readonly preview: (
    projectId: string,
    audience: { readonly condition?: Condition; readonly segment?: Segment },
    sampleSize: number
  ) => Effect.Effect<
    { readonly total: number; readonly reachable: number; readonly sample: ReadonlyArray<Contact> },
    PersistenceError
  >
  /** Recounts memberCount (no membership writes, no events). */
  readonly refreshCount: (segment: Segment) => Effect.Effect<Segment, PersistenceError>
}>()("app/store/Segments") {
  static readonly layer = Layer.effect(
    Segments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock
      const outbox = yield* Outbox
      const segmentRows = decodeRows(SegmentRow)
      const ids = decodeRows(IdRow)
      const counts = decodeRows(CountRow)
      const memberRows = decodeRows(MemberRow)
      const emailRows = decodeRows(EmailRow)

      const byProject = SqlSchema.findAll({
        Request: Schema.String,
        Result: SegmentRow,
        execute: (projectId) =>
          sql`SELECT ${sql.literal(SEGMENT_COLUMNS)} FROM segments WHERE project_id = ${projectId} ORDER BY created_at DESC, id DESC`
      })

      const byId = SqlSchema.findAll({
        Request: InProject,
        Result: SegmentRow,
        execute: ({ id, projectId }) =>
          sql`SELECT ${sql.literal(SEGMENT_COLUMNS)} FROM segments WHERE project_id = ${projectId} AND id = ${id}`
      })

      /**
       * Tells every lane of the project (definitions are cached per lane): committed to the outbox with
       * the change, then published at once after the commit (see Outbox.publishNow).
       */
      const notifyActor = (projectId: string, command: { readonly type: "segmentsChanged" }) =>
        outbox.append([{ kind: "command", projectId, commandId: uuidv7(), ...command }])
      const publishNow = (rows: ReadonlyArray<OutboxRow> | undefined) => (rows === undefined ? Effect.void : outbox.publishNow(rows))

      const create = Effect.fn("Segments.create")(function*(projectId: string, input: {
        readonly name: string
        readonly description: string | null
        readonly type: SegmentType
        readonly condition: Condition | null
        readonly trackMembership: boolean
      }) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* segmentRows(sql`
            INSERT INTO segments (id, project_id, name, description, type, condition, track_membership, created_at, updated_at)
            VALUES (${uuidv7()}, ${projectId}, ${input.name}, ${input.description}, ${input.type},
                    ${input.condition === null ? null : JSON.stringify(input.condition)}::jsonb, ${input.trackMembership},
                    ${now}::timestamptz, ${now}::timestamptz)
            RETURNING ${sql.literal(SEGMENT_COLUMNS)}`)
          // A new dynamic segment is backfilled by the actor (no entry events for the initial members).
          const command = input.type === "DYNAMIC" ? yield* notifyActor(projectId, { type: "segmentsChanged" }) : undefined
          return { segment: segmentOf(rows[0]!), command }
        })).pipe(Effect.tap(({ command }) => publishNow(command)), Effect.map(({ segment }) => segment))
      }, mapSqlError)

      const list = Effect.fn("Segments.list")(function*(projectId: string) {
        return (yield* byProject(projectId)).map(segmentOf)
      }, mapSqlError)

      const get = Effect.fn("Segments.get")(function*(projectId: string, id: string) {
        const [row] = yield* byId({ projectId, id })
        return row ? segmentOf(row) : undefined
      }, mapSqlError)

      const update = Effect.fn("Segments.update")(function*(projectId: string, id: string, input: {
        readonly name?: string | undefined
        readonly description?: string | null | undefined
        readonly condition?: Condition | undefined
        readonly trackMembership?: boolean | undefined
      }) {
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          const updated = yield* segmentRows(sql`
          UPDATE segments SET
            name = COALESCE(${input.name ?? null}, name),
            description = CASE WHEN ${input.description !== undefined} THEN ${input.description ?? null} ELSE description END,
            condition = COALESCE(${input.condition === undefined ? null : JSON.stringify(input.condition)}::jsonb, condition),
            version = version + CASE WHEN ${input.condition !== undefined} THEN 1 ELSE 0 END,
            backfill_generation = backfill_generation + CASE WHEN ${input.condition !== undefined} THEN 1 ELSE 0 END,
            -- After an edit the actor emits entry/exit for contacts the new condition moves.
            backfill_emits = backfill_emits OR ${input.condition !== undefined},
            track_membership = COALESCE(${input.trackMembership ?? null}::boolean, track_membership),
            updated_at = ${new Date(yield* Clock.currentTimeMillis).toISOString()}::timestamptz
          WHERE project_id = ${projectId} AND id = ${id}
          RETURNING ${sql.literal(SEGMENT_COLUMNS)}`)
          const command = updated.length > 0 ? yield* notifyActor(projectId, { type: "segmentsChanged" }) : undefined
          return { updated, command }
        })).pipe(Effect.tap(({ command }) => publishNow(command)), Effect.map(({ updated }) => updated))
        return rows[0] ? segmentOf(rows[0]) : undefined
      }, mapSqlError)

      const remove = Effect.fn("Segments.remove")(function*(projectId: string, id: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* ids(sql`DELETE FROM segments WHERE project_id = ${projectId} AND id = ${id} RETURNING id`)
          const command = rows.length > 0 ? yield* notifyActor(projectId, { type: "segmentsChanged" }) : undefined
          return { removed: rows.length > 0, command }
        })).pipe(Effect.tap(({ command }) => publishNow(command)), Effect.map(({ removed }) => removed))
      }, mapSqlError)

      const membersSql = (segment: Segment) => segmentMembersSql(sql, segment, clock.currentTimeMillisUnsafe())

      const contacts = Effect.fn("Segments.contacts")(function*(segment: Segment, page: number, pageSize: number) {
        const condition = membersSql(segment)
        const rows = yield* decodeRows(PageRow)(sql`
          SELECT ${sql.literal(CONTACT_COLUMNS_C)}, count(*) OVER ()::int AS total
          FROM contacts c WHERE c.project_id = ${segment.projectId} AND ${condition}
          ORDER BY c.created_at DESC, c.id DESC
          LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`)
        let total = rows[0]?.total ?? 0
        if (rows.length === 0 && page > 1) {
          const [count] = yield* counts(sql`
            SELECT count(*)::int AS n FROM contacts c WHERE c.project_id = ${segment.projectId} AND ${condition}`)
          total = count?.n ?? 0
        }
        return { data: rows.map(toContact), total }
      }, mapSqlError)

      const refreshCount = Effect.fn("Segments.refreshCount")(function*(segment: Segment) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The lanes' shares are locked first, so no lane's change lands between the count and the reset.
          yield* sql`SELECT 1 FROM segment_counts WHERE segment_id = ${segment.id} FOR UPDATE`
          const [count] = yield* counts(sql`
            SELECT count(*)::int AS n FROM contacts c WHERE c.project_id = ${segment.projectId} AND ${membersSql(segment)}`)
          yield* sql`DELETE FROM segment_counts WHERE segment_id = ${segment.id}`
          const rows = yield* segmentRows(sql`
            UPDATE segments SET member_count = ${count?.n ?? 0} WHERE id = ${segment.id}
            RETURNING ${sql.literal(SEGMENT_COLUMNS)}`)
          return segmentOf(rows[0]!)
        }))
      }, mapSqlError)

      /** segment.<slug>.entry|exit for a manual change of a tracked segment. */
      const emitMembership = (
        segment: Segment,
        kind: "entry" | "exit",
        contacts: ReadonlyArray<{ id: string; email: string }>,
        at: string
      ) =>
        segment.trackMembership
          ? outbox.emit(
            segment.projectId,
            contacts.map((contact) => ({
              name: `segment.${segmentSlug(segment.name)}.${kind}`,
              contactId: contact.id,
              email: contact.email,
              data: { segmentId: segment.id, segmentName: segment.name },
              at
            }))
          )
          : Effect.void

      /** Dynamic segments reading this one's membership are recomputed by the actor (with events). */
      const recomputeDependents = (segment: Segment) =>
        Effect.gen(function*() {
          const dependents = yield* ids(sql`
            UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                               backfill_generation = backfill_generation + 1
            WHERE project_id = ${segment.projectId} AND type = 'DYNAMIC'
              AND condition::text LIKE ${`%${segment.id}%`}
            RETURNING id`)
          if (dependents.length > 0) yield* notifyActor(segment.projectId, { type: "segmentsChanged" })
        })

      const emailsJson = (emails: ReadonlyArray<string>) => JSON.stringify([...new Set(emails)])

      const addMembers = Effect.fn("Segments.addMembers")(function*(segment: Segment, addresses: ReadonlyArray<string>, options: {
        readonly createMissing: boolean
        readonly subscribed: boolean | undefined
      }) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          let created = 0
          if (options.createMissing) {
            // New contacts announce themselves like any other, so the actor evaluates every segment for them.
            const inserted = yield* ids(sql`
              WITH ins AS (
                INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                SELECT gen_random_uuid(), ${segment.projectId}, e, ${
              options.subscribed ?? true
            }, '{}'::jsonb, ${now}::timestamptz, ${now}::timestamptz
                FROM jsonb_array_elements_text(${emailsJson(addresses)}::jsonb) e
                ON CONFLICT (project_id, email) DO NOTHING
                RETURNING id, email, subscribed
              ), announce AS (
                INSERT INTO outbox (id, subject, payload)
                SELECT gen_random_uuid(), ${outbox.contactSubjectSql(segment.projectId, "ins.id", "contact")}, jsonb_build_object(
                  'kind', 'contact', 'type', 'contact.created', 'projectId', ${segment.projectId}::text, 'contactId', ins.id,
                  'source', 'api.segments', 'at', ${now}::text,
                  'contact', jsonb_build_object('id', ins.id, 'email', ins.email, 'subscribed', ins.subscribed, 'data', '{}'::jsonb))
                FROM ins
              )
              SELECT id FROM ins`)
            created = inserted.length
          }
          const found = yield* memberRows(sql`
            SELECT id, email FROM contacts WHERE project_id = ${segment.projectId}
              AND email = ANY(${pgArray([...new Set(addresses)])}::text[])`)
          const entered = yield* decodeRows(EnteredRow)(sql`
            INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at)
            SELECT ${segment.id}, (x->>'id')::uuid, ${segment.projectId}, ${now}::timestamptz
            FROM jsonb_array_elements(${JSON.stringify(found)}::jsonb) x
            ON CONFLICT (segment_id, contact_id) DO UPDATE SET entered_at = EXCLUDED.entered_at, exited_at = NULL
              WHERE segment_memberships.exited_at IS NOT NULL
            RETURNING contact_id`)
          yield* sql`UPDATE segments SET member_count = member_count + ${entered.length} WHERE id = ${segment.id}`
          const enteredIds = new Set(entered.map((row) => row.contact_id))
          yield* emitMembership(segment, "entry", found.filter((contact) => enteredIds.has(contact.id)), now)
          if (entered.length > 0) yield* recomputeDependents(segment)
          const foundEmails = new Set(found.map((contact) => contact.email))
          return { added: entered.length, created, notFound: [...new Set(addresses)].filter((email) => !foundEmails.has(email)) }
        }))
      }, mapSqlError)

      const removeMembers = Effect.fn("Segments.removeMembers")(function*(segment: Segment, addresses: ReadonlyArray<string>) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const exited = yield* memberRows(sql`
            UPDATE segment_memberships m SET exited_at = ${now}::timestamptz
            FROM contacts c
            WHERE m.segment_id = ${segment.id} AND m.contact_id = c.id AND m.exited_at IS NULL
              AND c.project_id = ${segment.projectId}
              AND c.email = ANY(${pgArray([...new Set(addresses)])}::text[])
            RETURNING c.id, c.email`)
          yield* sql`UPDATE segments SET member_count = member_count - ${exited.length} WHERE id = ${segment.id}`
          yield* emitMembership(segment, "exit", exited, now)
          if (exited.length > 0) yield* recomputeDependents(segment)
          const known = yield* emailRows(sql`
            SELECT email FROM contacts WHERE project_id = ${segment.projectId}
              AND email = ANY(${pgArray([...new Set(addresses)])}::text[])`)
          const knownEmails = new Set(known.map((row) => row.email))
          return { removed: exited.length, notFound: [...new Set(addresses)].filter((email) => !knownEmails.has(email)) }
        }))
      }, mapSqlError)

      /**
       * Recorded on the segment (so a crash or a rebalance before it finishes does not lose it), then
       * every lane recomputes its own contacts, emitting entry/exit.
       */
      const requestCompute = (segment: Segment) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                                         backfill_generation = backfill_generation + 1
                     WHERE id = ${segment.id} AND project_id = ${segment.projectId}`
          return yield* notifyActor(segment.projectId, { type: "segmentsChanged" })
        })).pipe(Effect.flatMap(publishNow), mapSqlError)

      const preview = Effect.fn("Segments.preview")(function*(
        projectId: string,
        audience: { readonly condition?: Condition; readonly segment?: Segment },
        sampleSize: number
      ) {
        const where = audience.segment
          ? membersSql(audience.segment)
          : audience.condition
          ? compileConditionSql(sql, audience.condition, yield* Clock.currentTimeMillis)
          : sql.literal("TRUE")
        const [audienceCounts] = yield* decodeRows(CountsRow)(sql`
          SELECT count(*)::int AS total,
                 count(*) FILTER (WHERE c.subscribed AND NOT EXISTS (
                   SELECT 1 FROM suppressions s WHERE s.project_id = c.project_id AND s.email = c.email))::int AS reachable
          FROM contacts c WHERE c.project_id = ${projectId} AND ${where}`)
        const sample = sampleSize === 0 ? [] : yield* decodeRows(ContactRow)(sql`
          SELECT ${sql.literal(CONTACT_COLUMNS_C)}
          FROM contacts c WHERE c.project_id = ${projectId} AND ${where}
          ORDER BY c.created_at DESC, c.id DESC
          LIMIT ${sampleSize}`)
        return {
          total: audienceCounts?.total ?? 0,
          reachable: audienceCounts?.reachable ?? 0,
          sample: sample.map(toContact)
        }
      }, mapSqlError)

      return Segments.of({
        create,
        list,
        get,
        update,
        remove,
        contacts,
        membersSql,
        preview,
        refreshCount,
        requestCompute,
        addMembers,
        removeMembers
      })
    })
  )
}
