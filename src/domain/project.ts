/** A project as requests see it (the API key's project): shared by the contract and the store. */
import { Schema } from "effect"

export const Project = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  disabled: Schema.Boolean
})
export type Project = typeof Project.Type
