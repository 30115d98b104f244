/**
 * Tools the deployment checks run (Debian's docker-compose and caddy), installed like Postgres and NATS
 * in scripts/ensure-services.sh: with apt-get when missing and running as root; otherwise the error says
 * what to install.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"

const run = promisify(execFile)

const found = (command: string) => run("sh", ["-c", `command -v ${command}`]).then(({ stdout }) => stdout.trim(), () => undefined)

let updated: Promise<unknown> | undefined

export const ensureDebianTool = async (command: string, debianPackage: string): Promise<string> => {
  const existing = await found(command)
  if (existing) return existing
  if (process.getuid?.() !== 0 || !(await found("apt-get"))) {
    throw new Error(`${command} is missing: install Debian's ${debianPackage} package (sudo apt-get install -y ${debianPackage})`)
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  updated ??= run("apt-get", ["update", "-qq"], { env })
  await updated
  await run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", debianPackage], { env })
  const installed = await found(command)
  if (!installed) throw new Error(`apt-get installed ${debianPackage} but ${command} is still not on PATH`)
  return installed
}
