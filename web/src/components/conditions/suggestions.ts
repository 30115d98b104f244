/**
 * What the builder suggests: custom data keys and their types (/contacts/fields), event names
 * (/events/names) and the project's segments. Each is the pages' own query, so caches are shared.
 */
import { useApiQuery } from "../../api/hooks.ts"

export interface Suggestions {
  /** Custom fields (`data.plan`) with their type. */
  readonly dataFields: ReadonlyArray<{ readonly field: string; readonly type: string }>
  readonly fieldTypes: ReadonlyMap<string, string>
  readonly eventNames: ReadonlyArray<string>
  readonly segments: ReadonlyArray<{ readonly id: string; readonly name: string }>
}

export const useSuggestions = (): Suggestions => {
  const fields = useApiQuery(["contacts", "fields"], (client) => client.contacts.fields({}))
  const names = useApiQuery(["events", "names"], (client) => client.events.names({}))
  const segments = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  const dataFields = (fields.data?.fields ?? []).filter((field) => field.isCustom)
  return {
    dataFields,
    fieldTypes: new Map(dataFields.map((field) => [field.field, field.type])),
    eventNames: (names.data?.names ?? []).map((name) => name.name),
    segments: (segments.data ?? []).map(({ id, name }) => ({ id, name }))
  }
}
