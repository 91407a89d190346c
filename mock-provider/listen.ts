// Where the mock provider listens unless told otherwise (kept apart from the server so the
// CLI's --help can show them without loading express).
export const DEFAULT_PORT = 8090;
/** Loopback: a container passes 0.0.0.0. */
export const DEFAULT_HOST = '127.0.0.1';
