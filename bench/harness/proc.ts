/**
 * Process accounting from /proc (Linux): CPU time and memory of process groups — a process with its
 * descendants (`all` may run its roles as child processes), our database's Postgres processes,
 * nats-server — and the CPU a group spends per event over a window.
 *
 * CPU is utime + stime of each live process. Over a window, a process present at both ends counts its
 * difference, one started inside the window counts whole, and one that exited inside it is lost (its
 * count is reported as `exited`; the groups measured here keep their processes for the window).
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"

/** USER_HZ, the unit of utime and stime (100 on practically every Linux). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

export interface ProcStat {
  readonly pid: number
  readonly ppid: number
  readonly command: string
  /** utime + stime, in µs. */
  readonly cpuMicros: number
}

/** /proc/<pid>/stat, or undefined when the process is gone. */
export const readStat = (pid: number): ProcStat | undefined => {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8")
  } catch {
    return undefined
  }
  // The command sits in parentheses and may hold spaces and parentheses itself: split after the last one.
  const close = text.lastIndexOf(")")
  const fields = text.slice(close + 2).split(" ") // fields[0] is field 3 (state)
  const ticks = Number(fields[11]) + Number(fields[12]) // fields 14 (utime) and 15 (stime)
  return { pid, ppid: Number(fields[1]), command: text.slice(text.indexOf("(") + 1, close), cpuMicros: (ticks * 1e6) / TICKS_PER_SECOND }
}

const livePids = (): Array<number> => readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number)

const allStats = (): Array<ProcStat> => livePids().flatMap((pid) => readStat(pid) ?? [])

/** The process and all its live descendants (empty when it is gone). */
export const treeOf = (root: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  let rootAlive = false
  for (const stat of allStats()) {
    if (stat.pid === root) rootAlive = true
    const siblings = children.get(stat.ppid)
    if (siblings) siblings.push(stat.pid)
    else children.set(stat.ppid, [stat.pid])
  }
  if (!rootAlive) return []
  const tree: Array<number> = []
  const queue = [root]
  while (queue.length > 0) {
    const pid = queue.shift()!
    tree.push(pid)
    queue.push(...(children.get(pid) ?? []))
  }
  return tree
}

/** A field of /proc/<pid>/<file> given in kB (`VmRSS:  1234 kB`), in bytes; 0 when unreadable. */
const kilobytes = (pid: number, file: string, field: string) => {
  try {
    const match = readFileSync(`/proc/${pid}/${file}`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))
    return match ? Number(match[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/** Resident memory (VmRSS). */
export const rssBytes = (pid: number) => kilobytes(pid, "status", "VmRSS")

/** Proportional set size: resident memory with shared pages split among the processes sharing them. */
export const pssBytes = (pid: number) => kilobytes(pid, "smaps_rollup", "Pss")

/** A named set of processes, looked up afresh at every sample (processes come and go). */
export interface ProcessGroup {
  readonly name: string
  readonly pids: () => Promise<ReadonlyArray<number>>
}

/** A process and its descendants. */
export const processTree = (name: string, root: number): ProcessGroup => ({ name, pids: async () => treeOf(root) })

/** One process alone (the benchmark's own process runs the load generator and spawns the services). */
export const processAlone = (name: string, pid: number): ProcessGroup => ({ name, pids: async () => [pid] })

/** Every process whose command (/proc/<pid>/comm) is `command`, e.g. `nats-server`. */
export const processesNamed = (name: string, command: string): ProcessGroup => ({
  name,
  pids: async () => allStats().filter((stat) => stat.command === command).map((stat) => stat.pid)
})

/**
 * The Postgres processes that work for our database: its backends, the server's background processes
 * (checkpointer, WAL writer, ...: they have no database) and the postmaster. Backends of other databases
 * are left out: other work on a shared server is not ours. `query` runs on our database.
 */
export const postgresOf = (
  name: string,
  query: <T>(text: string) => Promise<Array<T>>
): ProcessGroup => ({
  name,
  pids: async () => {
    const rows = await query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL"
    )
    const pids = rows.map((row) => Number(row.pid))
    const postmaster = pids.length > 0 ? readStat(pids[0]!)?.ppid : undefined
    return postmaster === undefined ? pids : [postmaster, ...pids]
  }
})

export interface CpuSample {
  readonly at: number
  readonly groups: ReadonlyMap<string, ReadonlyMap<number, number>>
}

/** Every group's processes and their CPU µs now. */
export const sampleCpu = async (groups: ReadonlyArray<ProcessGroup>): Promise<CpuSample> => {
  const sampled = new Map<string, Map<number, number>>()
  for (const group of groups) {
    const cpu = new Map<number, number>()
    for (const pid of await group.pids()) {
      const stat = readStat(pid)
      if (stat) cpu.set(pid, stat.cpuMicros)
    }
    sampled.set(group.name, cpu)
  }
  return { at: performance.now(), groups: sampled }
}

export interface GroupCpu {
  readonly cpuMicros: number
  /** CPU over wall-clock time: 100 = one core busy all the window. */
  readonly percentOfCore: number
  readonly processes: number
  readonly exited: number
}

export const cpuBetween = (before: CpuSample, after: CpuSample): Record<string, GroupCpu> => {
  const wallMicros = (after.at - before.at) * 1000
  const out: Record<string, GroupCpu> = {}
  for (const [name, now] of after.groups) {
    const then = before.groups.get(name) ?? new Map<number, number>()
    let cpuMicros = 0
    for (const [pid, micros] of now) cpuMicros += micros - (then.get(pid) ?? 0)
    const exited = [...then.keys()].filter((pid) => !now.has(pid)).length
    out[name] = {
      cpuMicros: Math.round(cpuMicros),
      percentOfCore: Math.round((cpuMicros / wallMicros) * 10_000) / 100,
      processes: now.size,
      exited
    }
  }
  return out
}

export interface GroupMemory {
  readonly rssMiB: number
  readonly pssMiB: number
  readonly processes: number
}

const MiB = 2 ** 20

/** Resident (VmRSS, summed) and proportional (PSS) memory of every group now. */
export const memoryOf = async (groups: ReadonlyArray<ProcessGroup>): Promise<Record<string, GroupMemory>> => {
  const out: Record<string, GroupMemory> = {}
  for (const group of groups) {
    const pids = await group.pids()
    const sum = (bytes: (pid: number) => number) => Math.round((pids.reduce((total, pid) => total + bytes(pid), 0) / MiB) * 10) / 10
    out[group.name] = { rssMiB: sum(rssBytes), pssMiB: sum(pssBytes), processes: pids.length }
  }
  return out
}

export interface GroupCpuPerEvent extends GroupCpu {
  readonly microsPerEvent: number
}

/**
 * A CPU window over the groups, open from now: `end(events)` closes it and answers each group's
 * (CPU after − CPU before) / events, with the window's length.
 */
export const cpuWindow = async (groups: ReadonlyArray<ProcessGroup>) => {
  const before = await sampleCpu(groups)
  return {
    end: async (events: number) => {
      const after = await sampleCpu(groups)
      const used = cpuBetween(before, after)
      const perEvent: Record<string, GroupCpuPerEvent> = {}
      for (const [name, cpu] of Object.entries(used)) {
        perEvent[name] = { ...cpu, microsPerEvent: events > 0 ? Math.round(cpu.cpuMicros / events) : NaN }
      }
      return { seconds: Math.round(after.at - before.at) / 1000, events, groups: perEvent }
    }
  }
}
