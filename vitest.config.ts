import { defineConfig } from "vitest/config"

/**
 * Files that start no service process, browser or CLI (pure logic, and layer-level suites on their own
 * database): they run first, two at a time. A new file runs with the integration files unless listed here.
 */
const inProcess = [
  "test/actors/**/*.test.ts",
  "test/analytics/range.test.ts",
  "test/bench/soak.test.ts",
  "test/cli/config.test.ts",
  "test/conditions/canonical.test.ts",
  "test/conditions/evaluate.test.ts",
  "test/domain/**/*.test.ts",
  "test/http/contractBrowserSafe.test.ts",
  "test/http/domainErrors.test.ts",
  "test/imports/csv.test.ts",
  "test/lib/**/*.test.ts",
  "test/mail/render.test.ts",
  "test/process/startupGarbage.test.ts",
  "test/runtime.test.ts",
  "test/store/**/*.test.ts",
  "test/stream/outboxRefusal.test.ts",
  "test/structure/**/*.test.ts",
  "test/verify/address.test.ts",
  "test/verify/verifier.test.ts",
  "test/web/**/*.test.ts",
  "test/workflows/decider.test.ts",
  "test/workflows/factsCache.test.ts",
  "test/workflows/graph.test.ts"
]

/**
 * Integration files that run alone (after the others): they kill, stop or crash service processes, take
 * a dependency away, or assert wall-clock bounds (exit within 3 s, an update within 2 s), which a second
 * file's processes on the same 2 cores would turn into timing failures. The other integration files
 * run two at a time: most of their time is spent waiting (polls, leases, fixed negative waits), not on CPU.
 */
const alone = [
  "test/bench/harness.test.ts",
  "test/browser/live.test.ts",
  "test/campaigns/durability.test.ts",
  "test/deploy/**/*.test.ts",
  "test/destinations/destinations.test.ts",
  // Once (of 3 runs two at a time) a bulk-delete test found 1 waiting workflow execution of 2 for 15 s:
  // alone until that is understood.
  "test/http/contactJobs.test.ts",
  "test/http/idempotencyRecovery.test.ts",
  "test/http/importDurability.test.ts",
  "test/http/live.test.ts",
  "test/http/liveResync.test.ts",
  "test/http/loadShedding.test.ts",
  "test/http/outage.test.ts",
  "test/http/shutdown.test.ts",
  "test/http/trackBatch.test.ts",
  "test/mail/send.test.ts",
  "test/mail/sender.test.ts",
  "test/process/**/*.test.ts",
  "test/segments/time.test.ts",
  "test/stream/**/*.test.ts",
  "test/workflows/durability.test.ts",
  "test/workflows/webhooks.test.ts"
]

// expect.poll's own default (1 s) is shorter than a page takes to follow a change on a loaded 2-core machine:
// a poll waits up to 10 s for what it expects (it still returns as soon as it holds).
const shared = { testTimeout: 30_000, hookTimeout: 60_000, expect: { poll: { timeout: 10_000 } } }
// One migrated template database per run, copied by every stack (test/support/globalSetup.ts; it makes
// one however many projects list it).
// `all` runs its worker on the api's event loop, not a thread of its own (the default with 2 cores, which
// test/process/allInOne.test.ts covers): one thread less to start for every `all` of the suite.
const integration = { ...shared, globalSetup: ["test/support/globalSetup.ts"], env: { WORKER_THREAD: "false" } }

export default defineConfig({
  test: {
    projects: [
      {
        test: { ...shared, name: "in-process", include: inProcess, maxWorkers: 2, sequence: { groupOrder: 0 } }
      },
      {
        test: {
          ...integration,
          name: "integration",
          include: ["test/**/*.test.ts"],
          // test/faults runs on its own (`npm run test:faults`, vitest.faults.config.ts).
          exclude: [...inProcess, ...alone, "test/faults/**"],
          maxWorkers: 2,
          sequence: { groupOrder: 1 }
        }
      },
      {
        test: {
          ...integration,
          name: "integration-alone",
          include: alone,
          exclude: [...inProcess, "test/faults/**"],
          // One file at a time: workers with 2 s lease heartbeats, processes killed on purpose, timed exits.
          fileParallelism: false,
          sequence: { groupOrder: 2 }
        }
      }
    ]
  }
})
