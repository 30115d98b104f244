/**
 * A Postgres array literal (`{"a","b"}`), sent as ONE bound parameter and cast in SQL
 * (`= ANY(${pgArray(ids)}::uuid[])`). Unlike `ARRAY(SELECT jsonb_array_elements_text(...))`, an array
 * parameter keeps index scans in the generic plans Postgres switches to for prepared statements.
 */
export const pgArray = (values: ReadonlyArray<string>): string =>
  `{${values.map((value) => `"${value.replace(/["\\]/g, "\\$&")}"`).join(",")}}`
