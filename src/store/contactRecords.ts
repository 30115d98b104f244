/**
 * The contacts repository's records: what its methods take and answer, the error a write that would
 * outgrow the data limit fails with, and how a `contacts` row becomes a `Contact`.
 */
import { Data, Schema } from "effect"
import type { Condition } from "../domain/conditions/types.ts"
import { type DataPatch, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import { JsonObject, NullableTimestamp, Timestamp } from "./columns.ts"

export interface Contact {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly snoozedUntil: string | null
  readonly data: Record<string, unknown>
  readonly createdAt: string
  readonly updatedAt: string
}

export interface UpsertInput {
  readonly projectId: string
  readonly email: string
  /** Explicit value from the request; undefined keeps an existing contact's state. */
  readonly subscribed: boolean | undefined
  /** State of a new contact when `subscribed` is not given (differs per operation). */
  readonly subscribedByDefault: boolean
  readonly patch: DataPatch
  /** Which operation wrote (`api.contacts`, `api.track`, ...), carried on the change message. */
  readonly source: string
  /**
   * For a new contact, the state its creation is compared with to decide whether it subscribed or
   * unsubscribed (/v1/send: false, so an explicit opt-in emits contact.subscribed). Undefined: creating
   * a contact is not a subscription change.
   */
  readonly newContactBaseline?: boolean | undefined
  /** Further messages committed with the write (e.g. the tracked event); `contactId` and `email` are added. */
}

export interface UpsertResult {
  readonly contact: Contact
  readonly isNew: boolean
  /** Subscription state before this write (undefined for a new contact). */
  readonly previousSubscribed: boolean | undefined
}

/** Several contacts upserted with the same patch and subscription (one /v1/send request's recipients). */
export interface UpsertManyInput extends Omit<UpsertInput, "email"> {
  /** Normalized addresses, each once. */
  readonly emails: ReadonlyArray<string>
}

/** One address of an `upsertMany`: its contact, or the contact its patch would grow past the data limit (nothing written). */
export type UpsertManyResult =
  | { readonly email: string; readonly upserted: UpsertResult; readonly tooLarge?: undefined }
  | { readonly email: string; readonly upserted?: undefined; readonly tooLarge: ContactDataTooLarge }

export interface UpdateInput {
  readonly email?: string | undefined
  readonly subscribed?: boolean | undefined
  readonly patch: DataPatch
  /** Who made the change (the contact.updated message's `source`): `api.contacts` unless said. */
  readonly source?: string | undefined
}

export type ListSort = "createdAt" | "email"

export interface ListQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly search: string | undefined
  readonly subscribed: boolean | undefined
  /** Only the segment's current members (the segment already found in the project). */
  readonly segment?: { readonly id: string; readonly type: string; readonly condition: Condition | null } | undefined
  /** Only contacts with this custom field; with `equals`, whose value reads as that text (`pro`, `42`, `true`). */
  readonly data?: { readonly path: ReadonlyArray<string>; readonly equals: string | undefined } | undefined
  readonly sort: ListSort
  readonly dir: "asc" | "desc"
}

export interface ListPage {
  readonly data: ReadonlyArray<Contact>
  readonly cursor: string | null
  readonly hasMore: boolean
  readonly total: number
}

export interface FieldDescriptor {
  readonly field: string
  readonly type: string
  readonly isCustom: boolean
  readonly coverage: number
}

/** The write would grow the contact's custom data past MAX_CONTACT_DATA_BYTES; nothing was written. */
export class ContactDataTooLarge extends Data.TaggedError("ContactDataTooLarge")<{ readonly contactId: string }> {
  readonly limitBytes = MAX_CONTACT_DATA_BYTES
}

/**
 * A `contacts` row as CONTACT_COLUMNS select it. Decoded on the engine's per-event upserts too, so it is
 * seven plain fields: `data` is only checked to be an object.
 */
export const ContactRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  subscribed: Schema.Boolean,
  snoozed_until: NullableTimestamp,
  data: JsonObject,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type ContactRow = typeof ContactRow.Type

/** The columns ContactRow decodes, unqualified (`contacts` or a CTE over it). */
export const CONTACT_COLUMNS = "id, email, subscribed, snoozed_until, data, created_at, updated_at"

/** The same columns of `contacts c`. */
export const CONTACT_COLUMNS_C = "c.id, c.email, c.subscribed, c.snoozed_until, c.data, c.created_at, c.updated_at"

export const toContact = (row: ContactRow): Contact => ({
  id: row.id,
  email: row.email,
  subscribed: row.subscribed,
  snoozedUntil: row.snoozed_until,
  data: row.data,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

export interface ContactMemberships {
  readonly segments: ReadonlyArray<{ readonly id: string; readonly name: string; readonly enteredAt: string }>
  readonly executions: ReadonlyArray<{
    readonly id: string
    readonly workflow: { readonly id: string; readonly name: string }
    readonly status: string
    readonly startedAt: string
    readonly finishedAt: string | null
  }>
}
