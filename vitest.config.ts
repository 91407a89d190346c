import { defineConfig } from 'vitest/config';

// One run holds every tier: unit, integration (real sockets) and end to end (k6, Prometheus).
// Files run in forked processes, two at a time on a 2-core machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
