import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration files start several service processes each (workers with 2 s lease heartbeats);
    // one file at a time keeps a 2-core machine from starving them into timing failures.
    maxWorkers: 1
  }
})
