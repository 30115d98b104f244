/**
 * The benchmark harness's measuring instruments: /proc accounting (a process tree's CPU and memory
 * against what the processes report of themselves, windows, our database's Postgres processes against
 * another database's) and the SMTP sink's counting mode (arrivals and DKIM signatures, nothing parsed).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { generateKeyPairSync, randomBytes } from "node:crypto"
import { createInterface } from "node:readline"
import nodemailer from "nodemailer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cpuBetween, cpuWindow, memoryOf, postgresOf, processTree, readStat, sampleCpu, treeOf } from "../../bench/harness/proc.ts"
import pg, { databaseUrlOf } from "../support/pg.ts"
import { startSmtpSink } from "../support/smtp.ts"

/**
 * A node process with one idle child. On each stdin line `burn <ms>` it spins for that long; after
 * start-up and after each burn it prints its own CPU (process.cpuUsage) and RSS.
 */
const SUBJECT = `
const { spawn } = require("node:child_process")
const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
const report = () => {
  const cpu = process.cpuUsage()
  console.log(JSON.stringify({ child: child.pid, cpuMicros: cpu.user + cpu.system, rss: process.memoryUsage().rss }))
}
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const end = Date.now() + Number(line.split(" ")[1])
  while (Date.now() < end) {}
  report()
})
process.on("SIGTERM", () => { child.kill(); process.exit(0) })
report()
`

interface Report {
  readonly child: number
  readonly cpuMicros: number
  readonly rss: number
}

describe("process accounting", () => {
  let subject: ChildProcess
  const reports: Array<Report> = []
  const waiters: Array<() => void> = []
  const nextReport = (count: number) =>
    new Promise<Report>((resolve) => {
      const check = () => (reports.length >= count ? resolve(reports[count - 1]!) : waiters.push(check))
      check()
    })

  beforeAll(async () => {
    subject = spawn(process.execPath, ["-e", SUBJECT], { stdio: ["pipe", "pipe", "inherit"] })
    createInterface({ input: subject.stdout! }).on("line", (line) => {
      reports.push(JSON.parse(line))
      for (const waiter of waiters.splice(0)) waiter()
    })
    const first = await nextReport(1)
    // The idle child is a node process too: wait until its start-up is over (its CPU stops moving), or a
    // slow machine counts it in the windows below.
    let previous = -1
    for (let tries = 0; tries < 50; tries++) {
      const now = readStat(first.child)?.cpuMicros ?? 0
      if (now === previous) break
      previous = now
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })
  afterAll(async () => {
    const exited = new Promise((resolve) => subject.once("exit", resolve))
    subject.kill("SIGTERM")
    await exited
  })

  // utime and stime count in clock ticks (10 ms); the process is idle between its report and our read.
  const TICK_SLACK_MICROS = 30_000

  it("finds a process's descendants and reads its CPU and memory as the process sees them", async () => {
    const report = reports[0]!
    expect(treeOf(subject.pid!)).toEqual([subject.pid, report.child])
    expect(readStat(report.child)?.ppid).toBe(subject.pid)
    expect(Math.abs(readStat(subject.pid!)!.cpuMicros - report.cpuMicros)).toBeLessThan(TICK_SLACK_MICROS)
    const memory = await memoryOf([processTree("subject", subject.pid!)])
    expect(memory.subject!.processes).toBe(2)
    // The tree's resident memory holds the subject's (as it reported it) plus its child's.
    expect(memory.subject!.rssMiB * 2 ** 20).toBeGreaterThan(report.rss)
    expect(memory.subject!.pssMiB).toBeGreaterThan(0)
  })

  it("measures the CPU a tree spent over a window, and per event", async () => {
    const groups = [processTree("subject", subject.pid!)]
    const before = await sampleCpu(groups)
    const window = await cpuWindow(groups)
    const from = reports.at(-1)!.cpuMicros
    subject.stdin!.write("burn 200\n")
    const burnt = (await nextReport(reports.length + 1)).cpuMicros - from
    const used = cpuBetween(before, await sampleCpu(groups)).subject!
    expect(burnt).toBeGreaterThan(0)
    expect(Math.abs(used.cpuMicros - burnt)).toBeLessThan(TICK_SLACK_MICROS)
    expect(used.processes).toBe(2)
    expect(used.exited).toBe(0)
    const perEvent = await window.end(10)
    expect(perEvent.events).toBe(10)
    expect(perEvent.groups.subject!.microsPerEvent).toBe(Math.round(perEvent.groups.subject!.cpuMicros / 10))
  })
})

describe("Postgres processes of a database", () => {
  const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
  const database = `ms_test_${randomBytes(5).toString("hex")}`
  const url = databaseUrlOf(ADMIN_URL, database)
  beforeAll(() => pg.exec(ADMIN_URL, `CREATE DATABASE ${database}`))
  afterAll(async () => {
    await pg.close(url)
    await pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  })

  it("are its backends, the server's background processes and the postmaster, not other databases' backends", async () => {
    const query = <T>(text: string) => pg.query<T>(url, text)
    const [ours] = await query<{ pid: number }>("SELECT pg_backend_pid() AS pid")
    const [theirs] = await pg.query<{ pid: number }>(ADMIN_URL, "SELECT pg_backend_pid() AS pid")
    const [background] = await query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
    const pids = await postgresOf("postgres", query).pids()
    expect(pids).toContain(ours!.pid)
    expect(pids).toContain(background!.pid)
    expect(pids).toContain(readStat(ours!.pid)!.ppid)
    expect(pids).not.toContain(theirs!.pid)
  })
})

describe("SMTP sink, counting only", () => {
  it("counts arrivals and DKIM-signed messages without keeping them", async () => {
    const sink = await startSmtpSink({ parse: false })
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port })
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const mail = { from: "a@bench.test", to: "b@example.org", subject: "Hi", text: "Hello" }
    try {
      await transport.sendMail(mail)
      await transport.sendMail({
        ...mail,
        dkim: { domainName: "bench.test", keySelector: "s1", privateKey: privateKey.export({ type: "pkcs8", format: "pem" }) as string }
      })
      await sink.waitFor(2)
      expect(sink.arrivals).toHaveLength(2)
      expect(sink.dkimSigned()).toBe(1)
      expect(sink.messages).toHaveLength(0)
    } finally {
      transport.close()
      await sink.close()
    }
  })
})
