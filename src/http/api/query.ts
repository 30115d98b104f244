/**
 * Query parameters: read as strings at run time and parsed leniently by the handlers (src/http/query.ts),
 * because the spec says so (unrecognised `sort` / `dir` / `type` values fall back to their defaults,
 * `limit` is clamped to 1..100, `page` below 1 is page 1), and typed in the OpenAPI document (integers
 * with their bounds, booleans, enums, date-times) so that generated clients send what the handlers read.
 * A typed request schema would turn those fallbacks into 422s; declaring both here keeps them together.
 */
import { Schema } from "effect"
import { isRecord } from "./openApiDocument.ts"
import { Text } from "./schemas.ts"

export interface QueryParam {
  /** The JSON Schema the OpenAPI document shows. */
  readonly schema: Readonly<Record<string, unknown>>
  readonly description: string
}

export const QueryParam = {
  integer: (
    description: string,
    bounds: { readonly minimum: number; readonly maximum?: number; readonly default?: number }
  ): QueryParam => ({
    schema: { type: "integer", ...bounds },
    description
  }),
  boolean: (description: string): QueryParam => ({ schema: { type: "boolean" }, description }),
  literals: (values: ReadonlyArray<string>, description: string, fallback?: string): QueryParam => ({
    schema: { type: "string", enum: values, ...(fallback === undefined ? {} : { default: fallback }) },
    description
  }),
  dateTime: (description: string): QueryParam => ({ schema: { type: "string", format: "date-time" }, description }),
  text: (description: string, format?: string): QueryParam => ({
    schema: { type: "string", ...(format === undefined ? {} : { format }) },
    description
  })
}

type Operation = Record<string, unknown>

/**
 * `fields` for the endpoint's `query` (every parameter an optional string, so the handler decides what
 * an unusable value means), and `document`, the `OpenApi.Transform` that puts the typed schemas in the
 * endpoint's OpenAPI operation.
 */
export const queryParameters = <const P extends Record<string, QueryParam>>(params: P) => {
  const fields = Object.fromEntries(Object.keys(params).map((name) => [name, Schema.optional(Text)])) as {
    readonly [K in keyof P]: Schema.optional<typeof Text>
  }
  const document = (operation: Operation): Operation => ({
    ...operation,
    parameters: (Array.isArray(operation.parameters) ? operation.parameters : []).map((parameter: unknown) => {
      if (!isRecord(parameter) || parameter.in !== "query" || typeof parameter.name !== "string") return parameter
      const param = Object.hasOwn(params, parameter.name) ? params[parameter.name] : undefined
      return param === undefined
        ? parameter
        : { name: parameter.name, in: "query", required: false, description: param.description, schema: param.schema }
    })
  })
  return { fields, document }
}

/** Page-paginated lists (conventions item 5). */
export const pageParams = {
  page: QueryParam.integer("1-based page number; values below 1 (or not numbers) read as 1", { minimum: 1, default: 1 }),
  pageSize: QueryParam.integer("Items per page; larger values are clamped to 100, values below 1 (or not numbers) read as 20", {
    minimum: 1,
    maximum: 100,
    default: 20
  })
}

/** Cursor-paginated lists (conventions item 4). */
export const cursorParams = {
  limit: QueryParam.integer("Items per page; values outside 1..100 are clamped, values that are not numbers read as 20", {
    minimum: 1,
    maximum: 100,
    default: 20
  }),
  cursor: QueryParam.text("The `cursor` of the previous page (a cursor this list did not return is a 400 INVALID_CURSOR)")
}

/** Sortable lists; unrecognised values fall back to the defaults (the spec). */
export const sortParams = (columns: ReadonlyArray<string>) => ({
  sort: QueryParam.literals(columns, "Column to sort by; unrecognised values fall back to `createdAt`", "createdAt"),
  dir: QueryParam.literals(["asc", "desc"], "Sort direction; unrecognised values fall back to `desc`", "desc")
})
