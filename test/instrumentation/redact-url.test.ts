// redactUrl: the URL for messages, without its user and password.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../instrumentation/index.ts';
import { redactUrlsIn, redactUrlsInValue } from '../../instrumentation/redact-url.ts';
import { redactUrl as fromRedis } from '../../instrumentation/redis.ts';

describe('redactUrl', () => {
  it('drops user and password, keeps host, port, path and query', () => {
    expect(redactUrl('redis://admin:s3cret@redis.internal:6380/2?x=1')).toBe('redis://redis.internal:6380/2?x=1');
    expect(redactUrl('redis://:s3cret@127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redactUrl('not a url')).toBe('(invalid URL)');
    expect(fromRedis).toBe(redactUrl);
  });

  it('property: no password survives', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{8,20}$/), fc.stringMatching(/^[a-z]{1,10}$/), (password, user) => {
        const out = redactUrl(`redis://${user}:${password}@host-${user}.example:6379/0`);
        expect(out).not.toContain(password);
        expect(out).toBe(`redis://host-${user}.example:6379/0`);
      }),
    );
  });

  it('redactUrlsIn: every URL in a text loses its credentials, nothing else changes', () => {
    expect(redactUrlsIn('provider http://alice:pw@127.0.0.1:9/ and redis://:x@r:6379/0, plain http://h/')).toBe(
      'provider http://127.0.0.1:9/ and redis://r:6379/0, plain http://h/',
    );
    expect(redactUrlsInValue({ flags: { 'provider-url': 'https://u:p@x.example/v1', n: 3, list: ['redis://a:b@r'] } })).toEqual({
      flags: { 'provider-url': 'https://x.example/v1', n: 3, list: ['redis://r'] },
    });
  });

  it('property: no password survives redactUrlsIn, and text without credentials is unchanged', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9:@%!$&'()*+,;=._~-]{1,20}$/),
        fc.stringMatching(/^[a-z]{1,10}$/),
        fc.constantFrom('http', 'https', 'redis', 'rediss'),
        fc.string(),
        (secret, host, scheme, around) => {
          fc.pre(!around.includes('://') && !around.includes(secret));
          const out = redactUrlsIn(`${around} ${scheme}://${secret}@${host}.example:1/p ${around}`);
          expect(out).toBe(`${around} ${scheme}://${host}.example:1/p ${around}`);
          expect(redactUrlsIn(around)).toBe(around);
        },
      ),
    );
  });
});
