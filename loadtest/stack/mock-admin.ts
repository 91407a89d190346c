// The mock provider's admin API as the load-test side uses it: read and patch the live
// config. The admin API answers loopback clients without a token; across a network (docker
// compose) the mock requires its admin token (QUOTASCOPE_MOCK_PROVIDER_ADMIN_TOKEN, formerly
// MOCK_PROVIDER_ADMIN_TOKEN, which the mock still reads), sent here as a bearer token.

function adminHeaders(): Record<string, string> {
  const token = process.env.QUOTASCOPE_MOCK_PROVIDER_ADMIN_TOKEN ?? process.env.MOCK_PROVIDER_ADMIN_TOKEN;
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** GET /admin/config: the mock's whole live configuration. */
export async function getMockConfig(mockUrl: string): Promise<unknown> {
  const res = await fetch(`${mockUrl}/admin/config`, { headers: adminHeaders(), signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`mock provider at ${mockUrl}: GET /admin/config answered ${res.status} ${await res.text()}`);
  return res.json();
}

/** PUT /admin/config: merges a partial configuration over the live one (validated by the mock). */
export async function putMockConfig(mockUrl: string, patch: unknown): Promise<void> {
  const res = await fetch(`${mockUrl}/admin/config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...adminHeaders() },
    body: JSON.stringify(patch),
    signal: AbortSignal.timeout(5000),
  });
  if (!res.ok) throw new Error(`mock provider at ${mockUrl} refused the config: ${res.status} ${await res.text()}`);
}
