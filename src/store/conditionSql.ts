/**
 * The SQL evaluator: a condition tree compiled to a parameterised boolean expression over `contacts c`
 * at a given instant, for bulk work (backfills, segment contact lists, counts, audiences). User values
 * only ever travel as parameters. It must answer exactly as domain/conditions/evaluate.ts does.
 */
import type { SqlClient, Statement } from "effect/sql"
import { DATE_PATTERN, DAY_MS, parseDate } from "../domain/conditions/dates.ts"
import { type Condition, type FieldRef, type Filter, membershipTarget, parseField, UNITS, windowMs } from "../domain/conditions/types.ts"
import { iso } from "./columns.ts"

type Fragment = Statement.Fragment

/** A Postgres text[] literal for a JSON path (sent as a parameter). */
const pgPath = (path: ReadonlyArray<string>) => `{${path.map((p) => `"${p.replace(/["\\]/g, "\\$&")}"`).join(",")}}`

export const compileConditionSql = (sql: SqlClient.SqlClient, condition: Condition, now: number): Fragment => {
  const TRUE = sql.literal("TRUE")
  const FALSE = sql.literal("FALSE")
  const not = (fragment: Fragment) => sql`NOT COALESCE(${fragment}, FALSE)`

  /** The stored JSON value of a data field, NULL when missing or JSON null. */
  const dataValue = (path: ReadonlyArray<string>) => sql`NULLIF(c.data #> ${pgPath(path)}::text[], 'null'::jsonb)`

  /** The stored value as an instant: timestamps are; data values must be date strings. */
  const instant = (ref: FieldRef): Fragment | undefined => {
    if (ref.kind === "timestamp") return sql.literal(ref.column === "createdAt" ? "c.created_at" : "c.updated_at")
    if (ref.kind !== "data") return undefined
    const value = dataValue(ref.path)
    return sql`(CASE WHEN jsonb_typeof(${value}) = 'string' AND (${value} #>> '{}') ~ ${DATE_PATTERN}
                     THEN ms_try_timestamptz(${value} #>> '{}') END)`
  }

  const compareDates = (operator: Filter["operator"], t: Fragment, value: { at: number; isDay: boolean }) => {
    const start = iso(value.at)
    const end = iso(value.isDay ? value.at + DAY_MS : value.at)
    switch (operator) {
      case "equals":
        return value.isDay ? sql`(${t} >= ${start}::timestamptz AND ${t} < ${end}::timestamptz)` : sql`(${t} = ${start}::timestamptz)`
      case "greaterThan":
        return value.isDay ? sql`(${t} >= ${end}::timestamptz)` : sql`(${t} > ${start}::timestamptz)`
      case "greaterThanOrEqual":
        return sql`(${t} >= ${start}::timestamptz)`
      case "lessThan":
        return sql`(${t} < ${start}::timestamptz)`
      case "lessThanOrEqual":
        return value.isDay ? sql`(${t} < ${end}::timestamptz)` : sql`(${t} <= ${start}::timestamptz)`
      default:
        return FALSE
    }
  }

  const valueFilter = (filter: Filter, ref: FieldRef): Fragment => {
    const { operator, value } = filter
    switch (operator) {
      case "exists":
      case "notExists": {
        const exists = ref.kind === "data" ? sql`(${dataValue(ref.path)} IS NOT NULL)` : TRUE
        return operator === "exists" ? exists : not(exists)
      }
      case "equals":
      case "notEquals": {
        let equals: Fragment
        if (ref.kind === "email") equals = sql`(lower(c.email) = lower(${String(value)}))`
        else if (ref.kind === "subscribed") equals = sql`(c.subscribed = ${value as boolean})`
        else if (ref.kind === "timestamp") equals = compareDates("equals", instant(ref)!, parseDate(value)!)
        else if (ref.kind === "data") equals = sql`(${dataValue(ref.path)} = ${JSON.stringify(value)}::jsonb)`
        else equals = FALSE
        return operator === "equals" ? sql`COALESCE(${equals}, FALSE)` : not(equals)
      }
      case "contains":
      case "notContains": {
        let contains: Fragment
        if (ref.kind === "email") contains = sql`(strpos(lower(c.email), lower(${String(value)})) > 0)`
        else if (ref.kind === "data") {
          const v = dataValue(ref.path)
          contains = sql`(jsonb_typeof(${v}) = 'string' AND strpos(lower(${v} #>> '{}'), lower(${String(value)})) > 0)`
        } else contains = FALSE
        if (operator === "contains") return sql`COALESCE(${contains}, FALSE)`
        // Only a value the contact has can fail to contain: a missing (or JSON null) field matches neither.
        return ref.kind === "data" ? sql`(${dataValue(ref.path)} IS NOT NULL AND ${not(contains)})` : not(contains)
      }
      case "greaterThan":
      case "lessThan":
      case "greaterThanOrEqual":
      case "lessThanOrEqual": {
        if (typeof value === "number" && ref.kind !== "timestamp") {
          if (ref.kind !== "data") return FALSE
          const v = dataValue(ref.path)
          const op = sql.literal({ greaterThan: ">", lessThan: "<", greaterThanOrEqual: ">=", lessThanOrEqual: "<=" }[operator])
          return sql`COALESCE(jsonb_typeof(${v}) = 'number' AND (${v})::numeric ${op} ${String(value)}::numeric, FALSE)`
        }
        const t = instant(ref)
        return t ? sql`COALESCE(${compareDates(operator, t, parseDate(value)!)}, FALSE)` : FALSE
      }
      case "within":
      case "olderThan": {
        const t = instant(ref)
        if (!t) return FALSE
        const cut = iso(now - windowMs(filter))
        return operator === "within"
          ? sql`COALESCE(${t} > ${cut}::timestamptz, FALSE)`
          : sql`COALESCE(${t} <= ${cut}::timestamptz, FALSE)`
      }
      default:
        return FALSE
    }
  }

  const aggregate = (name: string, extra: Fragment) =>
    sql`EXISTS (SELECT 1 FROM event_aggregates a
               WHERE a.project_id = c.project_id AND a.contact_id = c.id AND a.name = ${name} AND a.count > 0 AND ${extra})`

  const eventFilter = (filter: Filter, name: string): Fragment => {
    switch (filter.operator) {
      case "triggered":
        return aggregate(name, TRUE)
      case "notTriggered":
        return sql`NOT ${aggregate(name, TRUE)}`
      case "triggeredWithin":
        return aggregate(name, sql`a.last_at > ${iso(now - windowMs(filter))}::timestamptz`)
      case "notTriggeredWithin":
        return sql`NOT ${aggregate(name, sql`a.last_at > ${iso(now - windowMs(filter))}::timestamptz`)}`
      case "triggeredOlderThan":
        return aggregate(name, sql`a.last_at <= ${iso(now - windowMs(filter))}::timestamptz`)
      case "triggeredAtLeast": {
        const count = Number(filter.value)
        if (filter.within === undefined) return aggregate(name, sql`a.count >= ${count}`)
        const cut = iso(now - filter.within * UNITS[filter.unit!])
        return sql`((SELECT count(*) FROM events e
                    WHERE e.project_id = c.project_id AND e.contact_id = c.id AND e.name = ${name}
                      AND e.created_at > ${cut}::timestamptz) >= ${count})`
      }
      default:
        return FALSE
    }
  }

  const filterSql = (filter: Filter): Fragment => {
    const ref = parseField(filter.field)!
    if (ref.kind === "event") return eventFilter(filter, ref.name)
    if (ref.kind === "segment") {
      const member = sql`EXISTS (SELECT 1 FROM segment_memberships m
                                WHERE m.segment_id::text = ${membershipTarget(filter, ref)} AND m.contact_id = c.id
                                  AND m.exited_at IS NULL)`
      return filter.operator === "memberOfSegment" ? member : sql`NOT ${member}`
    }
    return valueFilter(filter, ref)
  }

  const treeSql = (tree: Condition): Fragment => {
    const groups = tree.groups.map((group) => {
      const parts = group.filters.map(filterSql)
      if (group.conditions) parts.push(treeSql(group.conditions))
      return sql`(${sql.and(parts)})`
    })
    return sql`(${tree.logic === "OR" ? sql.or(groups) : sql.and(groups)})`
  }

  return treeSql(condition)
}

/**
 * A segment's current members as a condition over `contacts c`: a dynamic segment's condition evaluated
 * now (so it answers before the actor has recorded the entries), a static one's recorded memberships.
 */
export const segmentMembersSql = (
  sql: SqlClient.SqlClient,
  segment: { readonly id: string; readonly type: string; readonly condition: Condition | null },
  now: number
): Fragment =>
  segment.type === "DYNAMIC" && segment.condition
    ? compileConditionSql(sql, segment.condition, now)
    : sql`EXISTS (SELECT 1 FROM segment_memberships m
                  WHERE m.segment_id = ${segment.id} AND m.contact_id = c.id AND m.exited_at IS NULL)`
