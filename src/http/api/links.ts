import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ErrorDocs, inputErrors, serverErrors } from "./errors.ts"
import { QueryParam, queryParameters } from "./query.ts"
import { Text } from "./schemas.ts"

const Html = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html; charset=utf-8" }))
/** A link whose signature does not check out gets a page saying so, for the person who followed it. */
const InvalidLink = Schema.String.annotate({ identifier: "InvalidLinkPage", description: "The link is not valid (an HTML page)" })
  .pipe(HttpApiSchema.asText({ contentType: "text/html; charset=utf-8" }), HttpApiSchema.status(404))
/** A path segment that is not valid percent-encoded UTF-8 matches no route: the JSON 404 envelope. */
const errors = [...inputErrors, ErrorDocs.notFound, ...serverErrors]
const ClickQuery = queryParameters({ u: QueryParam.text("The link the mail carried (signed with the email)", "uri") })
const pageErrors = [InvalidLink, ...errors]
const TokenParam = { token: Text }
/** `e`: the email the link was placed in (advisory: an unsubscribe through it counts for that email's campaign). */
const SourceQuery = queryParameters({ e: QueryParam.text("The email the link was sent in (set in the links we place in mail)", "uuid") })
const EmailParams = { emailId: Text, signature: Text }

/** The links placed in mail: tracking and subscription pages. No API key; every link is signed. */
export class LinksApi extends HttpApiGroup.make("links", { topLevel: true })
  .add(
    HttpApiEndpoint.get("open", "/t/o/:emailId/:signature", {
      params: EmailParams,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "image/gif" })),
      error: errors
    }).annotate(
      OpenApi.Description,
      "Open pixel (1×1 GIF, answered to every fetch); records email.open when the signature is valid, at most once per email per 60 minutes (repeated fetches by mail proxies and re-reads collapse)."
    ),
    HttpApiEndpoint.get("click", "/t/c/:emailId/:signature", {
      params: EmailParams,
      query: ClickQuery.fields,
      success: HttpApiSchema.Empty(302).annotate({ description: "Redirect to `u`" }),
      error: pageErrors
    }).annotate(OpenApi.Transform, ClickQuery.document).annotate(
      OpenApi.Description,
      "Click redirect: 302 to `u` only when it is the link the mail carried (signed); records email.click."
    ),
    HttpApiEndpoint.get("unsubscribePage", "/unsubscribe/:token", {
      params: TokenParam,
      query: SourceQuery.fields,
      success: Html,
      error: pageErrors
    })
      .annotate(OpenApi.Transform, SourceQuery.document)
      .annotate(
        OpenApi.Description,
        "Asks whether to unsubscribe (a GET changes nothing). A contact deleted since the link was sent: a page saying there is nothing to unsubscribe (200)."
      ),
    HttpApiEndpoint.post("unsubscribe", "/unsubscribe/:token", {
      params: TokenParam,
      query: SourceQuery.fields,
      success: Html,
      error: pageErrors
    })
      .annotate(OpenApi.Transform, SourceQuery.document)
      .annotate(
        OpenApi.Description,
        "Unsubscribes the contact: the page's button, and RFC 8058 one-click (List-Unsubscribe=One-Click). With `e` naming a " +
          "campaign email of this contact that neither bounced nor drew a complaint, the campaign's `unsubscribedCount` counts it. " +
          "A validly signed link of a contact deleted since: success (200), there is nothing to unsubscribe."
      ),
    HttpApiEndpoint.get("subscribePage", "/subscribe/:token", { params: TokenParam, success: Html, error: pageErrors }),
    HttpApiEndpoint.post("subscribe", "/subscribe/:token", { params: TokenParam, success: Html, error: pageErrors }),
    HttpApiEndpoint.get("manage", "/manage/:token", { params: TokenParam, query: SourceQuery.fields, success: Html, error: pageErrors })
      .annotate(OpenApi.Transform, SourceQuery.document)
  )
  .annotateMerge(OpenApi.annotations({ title: "Links", description: "Open and click tracking, subscription pages (signed links, no key)" }))
{}
