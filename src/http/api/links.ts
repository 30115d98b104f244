import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Text } from "./schemas.ts"

const Html = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html; charset=utf-8" }))
const TokenParam = { token: Text }
const EmailParams = { emailId: Text, signature: Text }

/** The links placed in mail: tracking and subscription pages. No API key; every link is signed. */
export class LinksApi extends HttpApiGroup.make("links", { topLevel: true })
  .add(
    HttpApiEndpoint.get("open", "/t/o/:emailId/:signature", {
      params: EmailParams,
      success: Schema.String
    }).annotate(OpenApi.Description, "Open pixel (1×1 GIF, answered to every fetch); records email.open when the signature is valid, at most once per email per 60 minutes (repeated fetches by mail proxies and re-reads collapse)."),
    HttpApiEndpoint.get("click", "/t/c/:emailId/:signature", {
      params: EmailParams,
      query: { u: Schema.optional(Text) },
      success: Schema.String
    }).annotate(OpenApi.Description, "Click redirect: 302 to `u` only when it is the link the mail carried (signed); records email.click."),
    HttpApiEndpoint.get("unsubscribePage", "/unsubscribe/:token", { params: TokenParam, success: Html }),
    HttpApiEndpoint.post("unsubscribe", "/unsubscribe/:token", { params: TokenParam, success: Html })
      .annotate(OpenApi.Description, "Unsubscribes the contact: the page's button, and RFC 8058 one-click (List-Unsubscribe=One-Click)."),
    HttpApiEndpoint.get("subscribePage", "/subscribe/:token", { params: TokenParam, success: Html }),
    HttpApiEndpoint.post("subscribe", "/subscribe/:token", { params: TokenParam, success: Html }),
    HttpApiEndpoint.get("manage", "/manage/:token", { params: TokenParam, success: Html })
  )
  .annotateMerge(OpenApi.annotations({ title: "Links", description: "Open and click tracking, subscription pages (signed links, no key)" }))
{}
