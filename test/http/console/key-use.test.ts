// An admin key used through the console is used: its "last used" (when, and from which address)
// shows the console's requests as it shows the Admin API's, on the console's own Admin keys page
// too, so a key in daily use in a browser does not look idle, nor a stolen one's use unseen.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

test('a key signed in with shows on the Admin keys page as used, when and from where, not as never used', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'desk', { scope: 'admin' });
  const consoleUrl = `${portal.portal.url}/vpn-user-portal/admin/`;
  const signedIn = await fetch(`${consoleUrl}sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams({ credential: key }).toString(),
  });
  assert.equal(signedIn.status, 303, await signedIn.text());
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';

  const deskRow = async (): Promise<string> => {
    const page = await fetch(`${consoleUrl}keys`, { headers: { cookie } });
    assert.equal(page.status, 200);
    return /<tr><td>desk<\/td>.*?<\/tr>/.exec(await page.text())?.[0] ?? '';
  };
  // "Last used" is written beside the request, not before its answer.
  await until('the console’s use of the key shown', async () =>
    /<td>\S+ from 127\.0\.0\.1<\/td>/.test(await deskRow()),
  );
  const listed = await portal.get('/admin_keys');
  const desk = (listed.json() as { admin_keys: { name: string; last_used_address: string | null }[] }).admin_keys.find(
    (entry) => entry.name === 'desk',
  );
  assert.equal(desk?.last_used_address, '127.0.0.1', 'the Admin API lists the same use');
});
