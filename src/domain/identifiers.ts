/**
 * Branded ids: a ProjectId is not a ContactId even though both are uuid strings, so a repository
 * answering them (and code passing them on) cannot mix them up. Decoded from rows by the
 * repositories' row schemas (src/store/columns.ts and each repository's row).
 */
import { Schema } from "effect"

export const ProjectId = Schema.String.pipe(Schema.brand("ProjectId"))
export type ProjectId = typeof ProjectId.Type

export const ContactId = Schema.String.pipe(Schema.brand("ContactId"))
export type ContactId = typeof ContactId.Type

export const DomainId = Schema.String.pipe(Schema.brand("DomainId"))
export type DomainId = typeof DomainId.Type
