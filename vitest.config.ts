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

// expect.poll's own default (1 s) is shorter than a page takes to follow a change on a loaded 2-core machine:
// a poll waits up to 10 s for what it expects (it still returns as soon as it holds).
const shared = { testTimeout: 30_000, hookTimeout: 60_000, expect: { poll: { timeout: 10_000 } } }

export default defineConfig({
  test: {
    projects: [
      {
        test: { ...shared, name: "in-process", include: inProcess, maxWorkers: 2, sequence: { groupOrder: 0 } }
      },
      {
        test: {
          ...shared,
          name: "integration",
          include: ["test/**/*.test.ts"],
          // test/faults runs on its own (`npm run test:faults`, vitest.faults.config.ts).
          exclude: [...inProcess, "test/faults/**"],
          // One migrated template database per run, copied by every stack (test/support/globalSetup.ts).
          globalSetup: ["test/support/globalSetup.ts"],
          // Integration files start several service processes each (workers with 2 s lease heartbeats);
          // one file at a time keeps a 2-core machine from starving them into timing failures.
          fileParallelism: false,
          // `all` runs its worker on the api's event loop, not a thread of its own (the default with 2 cores,
          // which test/process/allInOne.test.ts covers): one thread less to start for every `all` of the suite.
          env: { WORKER_THREAD: "false" },
          sequence: { groupOrder: 1 }
        }
      }
    ]
  }
})
