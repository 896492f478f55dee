// Console sessions on a real database with a clock the test moves: a session has its key's
// rights, ends when idle too long, at its lifetime however busy (also one shortened since), when
// its key expires or its address leaves the key's allow-list, and when the secret it signed in
// with, or the pepper its key is checked under, changes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { callerName, callerProfiles, callerScope } from '../../../src/core/admin-call.js';
import { checkSession, signIn, signOut, type ConsoleSessionTimes } from '../../../src/core/console/index.js';
import { ManualClock, makeAdminKey } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

const MINUTE = 60_000;
const times: ConsoleSessionTimes = {
  idleTimeoutMs: 30 * MINUTE,
  sessionLifetimeMs: 12 * 60 * MINUTE,
  addressAllowed: (list, address) => list.some((prefix) => prefix === `${address}/32`),
};

test('a session acts with its key’s scope and profiles, stays while used, and ends when idle too long', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'desk', { scope: 'write', profiles: ['employees'] });
  const signedIn = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  const { token } = signedIn.session;

  const check = await checkSession(ctx, token, '127.0.0.1', times);
  assert.ok(check.valid);
  const { caller } = check.session;
  assert.equal(caller.kind, 'console-session', 'a session, never the key itself');
  assert.equal(callerName(caller), 'desk');
  assert.equal(callerScope(caller), 'write');
  assert.deepEqual(callerProfiles(caller), ['employees']);
  assert.equal(check.session.csrfToken, signedIn.session.csrfToken);

  for (let step = 0; step < 4; step++) {
    clock.advance(20 * MINUTE);
    assert.equal(
      (await checkSession(ctx, token, '127.0.0.1', times)).valid,
      true,
      'a request every 20 minutes keeps it',
    );
  }
  clock.advance(31 * MINUTE);
  const idle = await checkSession(ctx, token, '127.0.0.1', times);
  assert.deepEqual(idle, { valid: false, reason: 'Your session ended after a time without use; sign in again.' });
  assert.equal((await checkSession(ctx, token, '127.0.0.1', times)).valid, false, 'an ended session is gone');
});

test('a session used after the clock was set back ends when idle for the idle time from then, not from the later time it was last seen', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'desk', { scope: 'read' });
  const signedIn = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  const { token } = signedIn.session;

  // The clock ran two hours ahead and is put right; the session is used once, then left.
  clock.advance(-2 * 60 * MINUTE);
  assert.equal((await checkSession(ctx, token, '127.0.0.1', times)).valid, true);
  clock.advance(31 * MINUTE);
  assert.deepEqual(await checkSession(ctx, token, '127.0.0.1', times), {
    valid: false,
    reason: 'Your session ended after a time without use; sign in again.',
  });
});

test('a session ends at its lifetime however busy, on sign-out, and when its key expires or its address is not the key’s', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'busy', { scope: 'read' });
  const busy = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(busy.ok);
  for (let minutes = 0; minutes < 12 * 60 - 20; minutes += 20) {
    clock.advance(20 * MINUTE);
    assert.ok((await checkSession(ctx, busy.session.token, '127.0.0.1', times)).valid);
  }
  clock.advance(20 * MINUTE);
  assert.deepEqual(await checkSession(ctx, busy.session.token, '127.0.0.1', times), {
    valid: false,
    reason: 'Your session reached its end; sign in again.',
  });

  const leaving = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(leaving.ok);
  await signOut(ctx, leaving.session.token);
  assert.equal((await checkSession(ctx, leaving.session.token, '127.0.0.1', times)).valid, false);

  const shortKey = await makeAdminKey(portal, 'short', { expiresIn: 'PT10M' });
  const short = await signIn(ctx, shortKey, '127.0.0.1', times);
  assert.ok(short.ok);
  clock.advance(11 * MINUTE);
  const expired = await checkSession(ctx, short.session.token, '127.0.0.1', times);
  assert.equal(expired.valid, false);
  assert.match(expired.valid ? '' : expired.reason, /^Admin key "short" expired at /);

  const pinnedKey = await makeAdminKey(portal, 'pinned', { allowList: ['127.0.0.1/32'] });
  assert.deepEqual(await signIn(ctx, pinnedKey, '127.0.0.2', times), {
    ok: false,
    reason: 'Source address 127.0.0.2 is not allowed for key "pinned".',
  });
  const pinned = await signIn(ctx, pinnedKey, '127.0.0.1', times);
  assert.ok(pinned.ok);
  assert.equal(
    (await checkSession(ctx, pinned.session.token, '127.0.0.2', times)).valid,
    false,
    'the key’s allow-list holds for the session',
  );
});

test('a session begun under a longer lifetime ends once adminConsole.sessionLifetime is shortened below its age; a longer one extends none', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'desk', { scope: 'admin' });
  const early = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(early.ok);
  for (let step = 0; step < 6; step++) {
    clock.advance(20 * MINUTE);
    assert.ok((await checkSession(ctx, early.session.token, '127.0.0.1', times)).valid);
  }

  // Two hours in, the administrators shorten the lifetime to one hour (a role taken away at the
  // provider, a laptop lost): the session already older than that ends on its next request.
  const shortened: ConsoleSessionTimes = { ...times, sessionLifetimeMs: 60 * MINUTE };
  const late = await signIn(ctx, key, '127.0.0.1', shortened);
  assert.ok(late.ok);
  assert.deepEqual(await checkSession(ctx, early.session.token, '127.0.0.1', shortened), {
    valid: false,
    reason: 'Your session reached its end; sign in again.',
  });
  assert.equal((await checkSession(ctx, late.session.token, '127.0.0.1', shortened)).valid, true, 'a new one holds');

  // Lengthened again, the session begun under one hour still ends at that hour.
  for (let step = 0; step < 2; step++) {
    clock.advance(25 * MINUTE);
    assert.ok((await checkSession(ctx, late.session.token, '127.0.0.1', times)).valid);
  }
  clock.advance(15 * MINUTE);
  assert.deepEqual(await checkSession(ctx, late.session.token, '127.0.0.1', times), {
    valid: false,
    reason: 'Your session reached its end; sign in again.',
  });
});

test('a session signed in with the secret ends when the secret changes', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const signedIn = await signIn(ctx, portal.secret, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  const check = await checkSession(ctx, signedIn.session.token, '127.0.0.1', times);
  assert.ok(check.valid);
  assert.deepEqual(check.session.caller, {
    kind: 'console-session',
    signedInWith: { kind: 'secret' },
    sourceAddress: '127.0.0.1',
  });
  assert.equal(callerName(check.session.caller), 'secret');
  assert.equal(callerScope(check.session.caller), 'admin');
  writeFileSync(ctx.keys.adminApiKeyPath, `${'0'.repeat(64)}\n`);
  // The portal reads its key files again at most once a second.
  await setTimeout(1_100);
  assert.deepEqual(await checkSession(ctx, signedIn.session.token, '127.0.0.1', times), {
    valid: false,
    reason: 'The Admin API secret changed; sign in again.',
  });
});

test('a session signed in with an admin key ends when the admin key pepper changes, as the key stops working', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'desk', { scope: 'admin' });
  const signedIn = await signIn(ctx, key, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  assert.equal((await checkSession(ctx, signedIn.session.token, '127.0.0.1', times)).valid, true);
  // A new pepper (every key made with the old one refused, on purpose or by a careless copy of DATA/keys).
  writeFileSync(ctx.keys.adminKeyPepperPath, `${'5'.repeat(64)}\n`);
  // The portal reads its key files again at most once a second.
  await setTimeout(1_100);
  assert.equal((await portal.get('/users', {}, { authorization: `Bearer ${key}` })).status, 401, 'the key is refused');
  assert.deepEqual(await checkSession(ctx, signedIn.session.token, '127.0.0.1', times), {
    valid: false,
    reason: `Admin key "desk" is not valid under ${ctx.keys.adminKeyPepperPath} as it is now; sign in again.`,
  });
});

test('a session signed in with a secret the administrator chose keeps no digest a copy of the database can test guesses against', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const chosen = 'correct horse battery staple';
  writeFileSync(ctx.keys.adminApiKeyPath, `${chosen}\n`);
  await setTimeout(1_100);
  // A portal whose secret predates admin keys has no pepper file until something needs one.
  rmSync(ctx.keys.adminKeyPepperPath, { force: true });
  const signedIn = await signIn(ctx, chosen, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  assert.equal(statSync(ctx.keys.adminKeyPepperPath).mode & 0o777, 0o600, 'the pepper is made on first use, private');
  const rows = await ctx.db.selectFrom('console_sessions').select('secret_digest').execute();
  assert.equal(rows.length, 1);
  const stored = rows[0]?.secret_digest ?? '';
  // Someone with the rows and a word list: no unkeyed digest of the right guess matches.
  for (const algorithm of ['sha256', 'sha512', 'sha1']) {
    const guess = createHash(algorithm).update(chosen).digest('hex');
    assert.notEqual(stored.slice(0, 64), guess.slice(0, 64), `${algorithm} of the secret is stored`);
  }
  assert.match(stored, /^[0-9a-f]{64}$/);
  assert.ok((await checkSession(ctx, signedIn.session.token, '127.0.0.1', times)).valid, 'the session holds');

  // An instance without the pepper (not copied from the first) says so rather than blame the secret.
  rmSync(ctx.keys.adminKeyPepperPath);
  await setTimeout(1_100);
  assert.deepEqual(await checkSession(ctx, signedIn.session.token, '127.0.0.1', times), {
    valid: false,
    reason: `This portal instance cannot read ${ctx.keys.adminKeyPepperPath} (every instance needs the same file); sign in again.`,
  });
});

test('a key of scope scim does not sign in to the console, and the refusal is audited', async (t) => {
  const portal = await startTestPortal({ clock: new ManualClock() });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  const key = await makeAdminKey(portal, 'entra', { scope: 'scim' });
  assert.deepEqual(await signIn(ctx, key, '127.0.0.1', times), {
    ok: false,
    reason: 'A key of scope "scim" is for SCIM provisioning only.',
  });
  assert.deepEqual(await ctx.db.selectFrom('console_sessions').selectAll().execute(), []);
  const refusal = await ctx.db
    .selectFrom('audit_log')
    .select(['key_name', 'status', 'detail'])
    .executeTakeFirstOrThrow();
  assert.deepEqual(refusal, { key_name: 'entra', status: 403, detail: 'key "entra" has scope "scim"' });
});
