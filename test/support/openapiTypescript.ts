/**
 * Runs openapi-typescript (the generator users point at /openapi.json) over a document: `node
 * test/support/openapiTypescript.ts < openapi.json` prints the generated TypeScript.
 *
 * openapi-typescript builds its output with the TypeScript 5 compiler API, which TypeScript 7 (the
 * project's compiler, a native binary) no longer ships; so `typescript` imported from inside
 * openapi-typescript resolves to the `typescript-5` alias here, and nowhere else.
 */
import { registerHooks } from "node:module"

registerHooks({
  resolve(specifier, context, nextResolve) {
    const fromGenerator = context.parentURL?.includes("/node_modules/openapi-typescript/") === true
    return nextResolve(fromGenerator && specifier === "typescript" ? "typescript-5" : specifier, context)
  }
})

const { default: openapiTS, astToString } = await import("openapi-typescript")
const chunks: Array<Buffer> = []
for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
const document = JSON.parse(Buffer.concat(chunks).toString("utf8"))
process.stdout.write(astToString(await openapiTS(document)))
