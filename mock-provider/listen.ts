// Where the mock provider listens unless told otherwise (kept apart from the server so the
// CLI's --help can show them without loading express).
export { DEFAULT_HOST } from '../agent/http-server.ts';
export const DEFAULT_PORT = 8090;
