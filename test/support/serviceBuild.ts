/**
 * The compiled service the run's stacks execute: scripts/build.ts's bundle of src/, built once per run into
 * tmp/test-service/<inputs' hash>/ and reused by later runs of the same sources. Running JavaScript instead of
 * stripping TypeScript at every process start saves each of the suite's few hundred service and CLI processes
 * about 0.9 s of start-up (1.5 → 0.6 s to ready for `all` on this machine), and the processes are then the
 * ones `npm start` and the image run. A folder per hash, built under a temporary name and renamed into place,
 * so two runs of different sources (or a run beside `npm start`'s dist/) never rebuild under each other.
 */
import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { randomBytes } from "node:crypto"
import { buildServer, serverInputHash } from "../../scripts/build.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const BUILDS = join(ROOT, "tmp", "test-service")
/** Builds of other sources are removed once they are this old (a run of them may still be going before). */
const STALE_MS = 60 * 60 * 1000

/** The entry (`tmp/test-service/<hash>/main.js`, relative to the checkout) of a build of today's sources. */
export const buildServiceForTests = async (): Promise<string> => {
  const hash = serverInputHash().slice(0, 16)
  const folder = join(BUILDS, hash)
  if (!existsSync(join(folder, ".build-hash"))) {
    const building = `${folder}.building-${randomBytes(4).toString("hex")}`
    await buildServer(true, building)
    try {
      renameSync(building, folder)
    } catch {
      // Another run built the same sources first: use theirs.
      rmSync(building, { recursive: true, force: true })
    }
  }
  for (const other of readdirSync(BUILDS)) {
    const path = join(BUILDS, other)
    if (other !== hash && Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true })
  }
  return relative(ROOT, join(folder, "main.js"))
}
