/** Images for template bodies: uploaded with a project's credentials, served publicly under PUBLIC_URL. */
import { Schema } from "effect"
import { Multipart } from "effect/http"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs, inputErrors, serverErrors } from "./errors.ts"
import { Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

/**
 * The multipart body, declared so the typed client sends a FormData; the handler reads the raw body itself
 * (it bounds the bytes as they stream in), so the server never buffers it through this schema.
 */
const ImageUpload = Schema.Struct({
  file: Multipart.SingleFileSchema.annotate({ description: "PNG, JPEG, GIF or WebP" })
}).pipe(HttpApiSchema.asMultipart())

export class UploadsApi extends HttpApiGroup.make("uploads")
  .add(
    HttpApiEndpoint.post("image", "/uploads/image", {
      payload: ImageUpload,
      success: Schema.Struct({ url: Schema.String }).pipe(HttpApiSchema.status(201)),
      error: [...commonErrors, ErrorDocs.badRequest, ErrorDocs.payloadTooLarge, ErrorDocs.unsupportedMediaType, ErrorDocs.validation]
    }).annotate(
      OpenApi.Description,
      "multipart/form-data with one file (field `file`), at most UPLOAD_MAX_BYTES (default 5 MB; 413 over it). The type is " +
        "decided from the bytes, not the name or the declared type: PNG, JPEG, GIF or WebP (SVG and anything else: 422 " +
        "UNSUPPORTED_IMAGE). Stored content-addressed; answers its public `url`."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Uploads", description: "Images for templates" }))
{}

export class UploadedFilesApi extends HttpApiGroup.make("uploadedFiles")
  .add(
    HttpApiEndpoint.get("file", "/uploads/:file", {
      params: { file: Text },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "image/*" })),
      error: [ErrorDocs.notFound, ...inputErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "An uploaded image (no key): cached for a year (immutable: the name is the SHA-256 of the bytes), with X-Content-Type-Options: nosniff."
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "Uploaded files", description: "Public image URLs" }))
{}
