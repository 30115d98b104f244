// ESLint over the service, the dashboard, the tests, the benchmarks and the scripts (`npm run lint`).
//
// typescript-eslint parses with the TypeScript 5 compiler API, which TypeScript 7 (the project's compiler, a
// native binary) no longer ships: `typescript` imported from inside typescript-eslint resolves to the
// `typescript-5` alias, as it does for openapi-typescript in test/support/openapiTypescript.ts. The hook must be
// registered before typescript-eslint loads, hence the dynamic import below.
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import globals from "globals"
import reactHooks from "eslint-plugin-react-hooks"
import { registerHooks } from "node:module"

registerHooks({
  resolve(specifier, context, nextResolve) {
    const parent = context.parentURL ?? ""
    const fromLinter = parent.includes("/node_modules/@typescript-eslint/") ||
      parent.includes("/node_modules/typescript-eslint/") || parent.includes("/node_modules/ts-api-utils/")
    const typescript = specifier === "typescript" || specifier.startsWith("typescript/")
    return nextResolve(fromLinter && typescript ? specifier.replace("typescript", "typescript-5") : specifier, context)
  }
})

const { default: tseslint } = await import("typescript-eslint")

export default defineConfig(
  {
    ignores: ["**/node_modules/", "**/dist/", "coverage/", "tmp/", ".data/", "bench/results/", "bench/.compare/"]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: "module",
      globals: { ...globals.node }
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // `_` (or a `_`-prefixed name) says "deliberately unused": a field taken out of an object by
      // destructuring (`const { secret: _, ...rest } = row`), an argument a callback's signature requires.
      "@typescript-eslint/no-unused-vars": ["error", {
        argsIgnorePattern: "^_",
        varsIgnorePattern: "^_",
        caughtErrorsIgnorePattern: "^_",
        destructuredArrayIgnorePattern: "^_",
        ignoreRestSiblings: true
      }],
      // Input checks reject control characters on purpose (header injection, email addresses, event names,
      // file names, Postgres text): every such regular expression is deliberate.
      "no-control-regex": "off"
    }
  },
  {
    files: ["web/src/**"],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error"
    }
  },
  {
    // The end-to-end tests and the benchmarks read the service's JSON answers untyped (`request()` gives
    // `json: any`); typing them from the contract is issue #38's item 5. The service and the dashboard keep the rule.
    files: ["test/**", "bench/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
