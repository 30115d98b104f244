/** Helper processes of a benchmark (baseline servers, the SMTP sink, the DNS server): start, stop. */
import { type ChildProcess, spawn } from "node:child_process"
import { ROOT } from "./settings.ts"

export interface StartedProcess {
  readonly child: ChildProcess
  /** The match of the `ready` pattern (its groups carry ports and the like). */
  readonly match: RegExpMatchArray
}

/** Starts `node <args>` in the repository and resolves once a stdout/stderr line matches `ready`. */
export const startProcess = (args: ReadonlyArray<string>, env: Record<string, string>, ready: RegExp) =>
  new Promise<StartedProcess>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = output.match(ready)
      if (match) resolve({ child, match })
      if (output.length > 100_000) output = output.slice(-10_000)
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${output}`)))
  })

export const stopProcess = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })
