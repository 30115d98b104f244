import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration files start their own service processes; two at a time suits a 2-core machine.
    maxWorkers: 2
  }
})
