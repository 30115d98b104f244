import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { DomainExists } from "../../domain/errors.ts"
import { bodyErrors, commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

export const Domain = Schema.Struct({
  id: Schema.String,
  domain: Schema.String,
  verified: Schema.Boolean,
  status: Schema.Literals(["PENDING", "VERIFIED", "FAILED"]),
  records: Schema.Array(Schema.Struct({
    purpose: Schema.Literals(["DKIM", "SPF", "DMARC"]),
    type: Schema.String,
    name: Schema.String,
    value: Schema.String,
    status: Schema.Literals(["VERIFIED", "MISSING", "MISMATCH", "UNKNOWN"]),
    required: Schema.Boolean
  })),
  createdAt: Timestamp,
  lastCheckedAt: Schema.NullOr(Timestamp)
}).annotate({
  identifier: "Domain",
  description: "VERIFIED once the DKIM record matches; FAILED when a different DKIM key is published; " +
    "SPF and DMARC are recommended and reported per record. A lookup that times out (UNKNOWN) changes nothing."
})

const IdParam = { id: Text }

export class DomainsApi extends HttpApiGroup.make("domains")
  .add(
    HttpApiEndpoint.post("create", "/domains", {
      payload: Schema.Struct({ domain: Text, projectId: Schema.optional(Text) }),
      success: Domain.pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ...bodyErrors, declared(DomainExists), ErrorDocs.conflict]
    }).annotate(OpenApi.Description, "Generates the domain's DKIM key pair and returns the DNS records to publish."),
    HttpApiEndpoint.get("list", "/domains/project/:projectId", {
      params: { projectId: Text },
      success: Schema.Array(Domain),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "The project's domains, verified and pending (only the key's own project)."),
    HttpApiEndpoint.get("get", "/domains/:id", {
      params: IdParam,
      success: Domain,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.get("verify", "/domains/:id/verify", {
      params: IdParam,
      success: Domain,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Checks the domain's DNS records now (also done every 5 minutes in the background)."),
    HttpApiEndpoint.delete("delete", "/domains/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(
    OpenApi.annotations({ title: "Domains", description: "Sending domains and their DKIM, SPF and DMARC records (secret key)" })
  )
{}
