// The console over plain HTTP, as its forms send it (no browser): a signed-in session with its
// CSRF token, for the stories of forged, stale or racing changes.
import assert from 'node:assert/strict';
import { consoleUrl } from './console-browser.js';
import type { TestPortal } from './test-portal.js';

export interface FormSession {
  readonly cookie: string;
  readonly csrf: string;
}

/**
 * Signs in with the sign-in form as a browser would, and reads the session's CSRF token from a
 * page the credential may open (`page`, a path under the console).
 */
export async function signIn(portal: TestPortal, credential: string, page: string): Promise<FormSession> {
  const answer = await fetch(`${consoleUrl(portal)}sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams({ credential }).toString(),
  });
  assert.equal(answer.status, 303, await answer.text());
  const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const opened = await fetch(`${consoleUrl(portal)}${page}`, { headers: { cookie } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await opened.text())?.[1];
  assert.ok(csrf !== undefined, 'every page carries the session’s CSRF token');
  return { cookie, csrf };
}

/** Sends a change's confirmation form with the session's CSRF token, as its "Yes" button does. */
export async function confirmChange(
  portal: TestPortal,
  session: FormSession,
  form: Record<string, string>,
): Promise<{ status: number; headers: Headers; text: string }> {
  const answer = await fetch(`${consoleUrl(portal)}do`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      'sec-fetch-site': 'same-origin',
    },
    body: new URLSearchParams({ ...form, csrf: session.csrf }).toString(),
  });
  return { status: answer.status, headers: answer.headers, text: await answer.text() };
}
