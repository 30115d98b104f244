import { defineConfig } from "vitest/config"

/**
 * `npm run test:faults`: the slow tests that take a dependency away under load (test/faults), each on its
 * own private Postgres and nats-server, one file at a time; `npm test` leaves them out.
 */
export default defineConfig({
  test: {
    name: "faults",
    include: ["test/faults/**/*.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    fileParallelism: false
  }
})
