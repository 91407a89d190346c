// URLs fit for messages, logs and exported files: user and password removed. One helper for
// every place quotascope prints or writes a URL. Free of the redis client, so a CLI can print
// a Redis URL without loading it.

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

/** `scheme://user:password@` in any text (a flag value, a log line), the credentials removed. */
const CREDENTIALS = /\b([a-z][a-z\d+.-]*:\/\/)[^\s/?#]*@/gi;

/** The text with the user and password of every URL in it removed; the rest as it was. */
export function redactUrlsIn(text: string): string {
  return text.replace(CREDENTIALS, '$1');
}

/** A JSON-able value with every string in it passed through redactUrlsIn (for files a run exports). */
export function redactUrlsInValue<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? redactUrlsIn(v) : v))) as T;
}
