/**
 * Image uploads: one file per multipart request, its type decided from its bytes (`file-type`), stored
 * content-addressed; and the public, long-cached route serving them.
 */
import { Effect, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { fileTypeFromBuffer } from "file-type"
import { AppConfig } from "../../config.ts"
import { Uploads } from "../../store/Uploads.ts"
import { Api } from "../api/Api.ts"
import { rendered } from "../errors.ts"
import { BadRequest, NotFound, PayloadTooLarge, UnsupportedMediaType, ValidationFailed } from "../api/statusErrors.ts"

/** What may be uploaded, by detected type. SVG is refused: it can carry script. */
const IMAGE_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", gif: "image/gif", webp: "image/webp" }

const FILE_NAME = /^([0-9a-f]{64})\.(png|jpg|gif|webp)$/

/** Room for the multipart framing around the file. */
const FRAMING_BYTES = 64 * 1024

export const UploadsHandlers = HttpApiBuilder.group(
  Api,
  "uploads",
  Effect.fnUntraced(function*(handlers) {
    const config = yield* AppConfig
    const uploads = yield* Uploads
    const tooLarge = new PayloadTooLarge({
      code: "PAYLOAD_TOO_LARGE",
      message: `An image may be at most ${config.uploadMaxBytes} bytes`,
      details: { limit: config.uploadMaxBytes }
    })

    /** The request body, refused past the limit while it streams in. */
    const readBody = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const declared = Number(request.headers["content-length"] ?? "0")
        if (declared > config.uploadMaxBytes + FRAMING_BYTES) return yield* tooLarge
        const chunks: Array<Uint8Array> = []
        let size = 0
        yield* request.stream.pipe(
          Stream.mapError(() => BadRequest.of("Could not read the request body")),
          Stream.runForEach((chunk) => {
            size += chunk.length
            if (size > config.uploadMaxBytes + FRAMING_BYTES) return Effect.fail(tooLarge)
            chunks.push(chunk)
            return Effect.void
          })
        )
        return Buffer.concat(chunks)
      })

    // Raw: the declared multipart payload is for the client and the document; the bytes are read here, bounded.
    return handlers.handleRaw("image", ({ request }) =>
      rendered(Effect.gen(function*() {
        const contentType = request.headers["content-type"] ?? ""
        if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
          return yield* new UnsupportedMediaType({
            code: "UNSUPPORTED_MEDIA_TYPE",
            message: "Send the image as multipart/form-data (field `file`)"
          })
        }
        const body = yield* readBody(request)
        // The platform's own multipart parser (undici), on the bytes already bounded above.
        const form = yield* Effect.tryPromise(() => new Response(body, { headers: { "content-type": contentType } }).formData()).pipe(
          Effect.mapError(() => BadRequest.of("The multipart body could not be parsed"))
        )
        const files = [...form.values()].filter((value): value is File => typeof value !== "string")
        if (files.length !== 1) {
          return yield* ValidationFailed.field(
            "file",
            `Send exactly one file (got ${files.length})`,
            files.length === 0 ? "required" : "too_many_files"
          )
        }
        const bytes = new Uint8Array(yield* Effect.promise(() => files[0]!.arrayBuffer()))
        if (bytes.length > config.uploadMaxBytes) return yield* tooLarge
        const detected = yield* Effect.promise(() => fileTypeFromBuffer(bytes))
        const mime = detected && IMAGE_TYPES[detected.ext]
        if (!detected || !mime) {
          return yield* new ValidationFailed({
            code: "UNSUPPORTED_IMAGE",
            message: "The file is not a PNG, JPEG, GIF or WebP image (decided from its content; SVG is not accepted)",
            errors: [{
              field: "file",
              message: "not a PNG, JPEG, GIF or WebP image",
              code: "unsupported_image",
              received: detected?.mime ?? "unknown"
            }]
          })
        }
        const id = yield* uploads.put(bytes, mime)
        return HttpServerResponse.jsonUnsafe({ url: `${config.publicUrl}/uploads/${id}.${detected.ext}` }, { status: 201 })
      })))
  })
)

export const UploadedFilesHandlers = HttpApiBuilder.group(
  Api,
  "uploadedFiles",
  Effect.fnUntraced(function*(handlers) {
    const uploads = yield* Uploads
    return handlers.handle("file", ({ params }) =>
      rendered(Effect.gen(function*() {
        const match = FILE_NAME.exec(params.file)
        const stored = match ? yield* uploads.get(match[1]!) : undefined
        if (!stored || IMAGE_TYPES[match![2]!] !== stored.contentType) return yield* NotFound.of("File")
        return HttpServerResponse.uint8Array(stored.bytes, {
          contentType: stored.contentType,
          headers: {
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
            "content-security-policy": "default-src 'none'"
          }
        })
      })))
  })
)
