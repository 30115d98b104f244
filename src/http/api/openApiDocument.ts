/** Finishing touches on the generated OpenAPI document that no single schema can express. */

/** A JSON object (not an array) of the document, for walking it. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Objects of any keys (custom data, `details`, step configs) come out of the schema compiler as a bare
 * `{ type: "object" }`. JSON Schema reads that as "any properties", but generators such as
 * openapi-typescript read it as an object with no properties (`Record<string, never>`), so a client
 * could not send custom data. Saying `additionalProperties: true` makes both readings agree.
 */
export const explicitOpenObjects = <D extends Record<string, unknown>>(document: D): D => {
  const stack: Array<unknown> = [document]
  while (stack.length > 0) {
    const node = stack.pop()
    if (Array.isArray(node)) {
      stack.push(...node)
    } else if (isRecord(node)) {
      if (
        node.type === "object" && node.properties === undefined && node.additionalProperties === undefined &&
        node.patternProperties === undefined && node.propertyNames === undefined
      ) {
        node.additionalProperties = true
      }
      stack.push(...Object.values(node))
    }
  }
  return document
}
