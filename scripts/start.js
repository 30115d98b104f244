/**
 * `npm start` (after scripts/ensure-services.sh): the dashboard's build checked as ./fresh.js checks
 * builds (scripts/build-web.ts runs only when an input is newer than web/dist/.build-hash), then `all`
 * as `npm run cli -- all` runs it (./cli.js: the service's build checked, dist/main.js in this process).
 */
import { ensureBuilt } from "./fresh.js"

ensureBuilt("web/dist", ["index.html"], "scripts/build-web.ts", [])
process.argv.splice(2, process.argv.length - 2, "all")
await import("./cli.js")
