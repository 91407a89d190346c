export const DEFAULT_MAX_WAIT_MS = 20_000;
