/**
 * The contacts aggregate in Postgres: the service and its contract. The methods live by what they do:
 * writes in contactUpserts.ts, reads in contactLists.ts, custom-data fields in contactFields.ts, and the
 * records they take and answer in contactRecords.ts.
 */
import { Context, Effect, Layer } from "effect"
import type { DuplicateEmail, InvalidCursor } from "../domain/errors.ts"
import { makeContactFields } from "./contactFields.ts"
import { makeContactLists } from "./contactLists.ts"
import type {
  Contact,
  ContactDataTooLarge,
  ContactMemberships,
  FieldDescriptor,
  ListPage,
  ListQuery,
  UpdateInput,
  UpsertInput,
  UpsertManyInput,
  UpsertManyResult,
  UpsertResult
} from "./contactRecords.ts"
import { makeContactUpserts } from "./contactUpserts.ts"
import type { PersistenceError } from "./PersistenceError.ts"

// What the methods take and answer, from where callers import the service.
export { ContactDataTooLarge } from "./contactRecords.ts"
export type * from "./contactRecords.ts"

export class Contacts extends Context.Service<Contacts, {
  readonly upsert: (input: UpsertInput) => Effect.Effect<UpsertResult, PersistenceError | ContactDataTooLarge>
  /**
   * `upsert` for several addresses at once, in one statement (one per retry of lost insert races): the
   * same patch and subscription for each, a change message each, results in the order of `emails`.
   */
  readonly upsertMany: (input: UpsertManyInput) => Effect.Effect<ReadonlyArray<UpsertManyResult>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Contact | undefined, PersistenceError>
  /** A contact found by id alone, for links that carry only the (signed) id; callers verify the signature. */
  readonly locate: (id: string) => Effect.Effect<{ readonly projectId: string; readonly contact: Contact } | undefined, PersistenceError>
  readonly update: (
    projectId: string,
    id: string,
    input: UpdateInput
  ) => Effect.Effect<Contact | undefined, DuplicateEmail | PersistenceError | ContactDataTooLarge>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  readonly list: (projectId: string, query: ListQuery) => Effect.Effect<ListPage, InvalidCursor | PersistenceError>
  readonly lookup: (
    projectId: string,
    emails: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Contact>, PersistenceError>
  readonly fields: (projectId: string) => Effect.Effect<ReadonlyArray<FieldDescriptor>, PersistenceError>
  readonly fieldExists: (projectId: string, field: string) => Effect.Effect<boolean, PersistenceError>
  readonly fieldValues: (
    projectId: string,
    field: string,
    page: number,
    pageSize: number
  ) => Effect.Effect<{ readonly values: ReadonlyArray<unknown>; readonly total: number }, PersistenceError>
  readonly deleteField: (projectId: string, field: string) => Effect.Effect<number, PersistenceError>
  /** The segments a contact is in now and its workflow executions (newest first, at most 100). */
  readonly memberships: (projectId: string, id: string) => Effect.Effect<ContactMemberships, PersistenceError>
}>()("app/store/Contacts") {
  static readonly layer = Layer.effect(
    Contacts,
    Effect.gen(function*() {
      return Contacts.of({ ...(yield* makeContactUpserts), ...(yield* makeContactLists), ...(yield* makeContactFields) })
    })
  )
}
