// The `quotascope` bin of this package (source .ts, or the built .js beside this module's own):
// how a local run starts the mock provider, the agent service and serve as child processes.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const QUOTASCOPE_BIN = fileURLToPath(new URL(`../../cli/quotascope${extname(fileURLToPath(import.meta.url))}`, import.meta.url));
