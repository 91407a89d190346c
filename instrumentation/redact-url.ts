// A URL fit for messages and logs: its user and password removed. Free of the redis client,
// so a CLI can print a Redis URL without loading it.

/** The URL without user and password, for messages ('(invalid URL)' when it does not parse). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}
