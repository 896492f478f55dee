// Node API /disconnect: byte counts are non-negative safe integers, stored exactly by SQLite and
// PostgreSQL alike; another count, or a connection age that is no such number, is refused with
// 400 and leaves the session open as it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  postOpenVpnDisconnect,
  reportOpenVpnConnect,
} from '../../support/openvpn-sessions.js';
import { startTestPortal } from '../../support/test-portal.js';

test('byte counts beyond 2^53 - 1 or not decimal are refused with 400, and the session stays open', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'jon');
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  const disconnect = (bytesIn: string, bytesOut = '1') =>
    postOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', bytes_in: bytesIn, bytes_out: bytesOut }).then(
      (answer) => `${answer.status} ${answer.text}`,
    );
  const history = async () =>
    (await connectionHistory(ctx.db, commonName)).map((entry) => [
      entry.bytesIn,
      entry.bytesOut,
      entry.disconnectedAt !== null,
    ]);

  for (const bytes of ['9999999999999999999', '9007199254740992', '-1', '1.5', '1e3', '']) {
    assert.equal(await disconnect(bytes), '400 {"error":"invalid value for \\"bytes_in\\""}', bytes);
  }
  assert.equal(await disconnect('1', '9223372036854775807'), '400 {"error":"invalid value for \\"bytes_out\\""}');
  assert.deepEqual(await history(), [[null, null, false]], 'nothing was written: the session is still open');

  assert.equal(await disconnect('9007199254740991', '0'), '200 OK', 'the largest safe integer');
  assert.deepEqual(await history(), [[9007199254740991, 0, true]]);
});

test('a connection age that is not a decimal number of milliseconds up to 2^53 - 1 is refused with 400, and the session stays open', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'noor');
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  const disconnect = (ageMs: string) =>
    postOpenVpnDisconnect(portal, commonName, {
      ip_four: '10.60.0.2',
      bytes_in: '1',
      bytes_out: '1',
      age_ms: ageMs,
    }).then((answer) => `${answer.status} ${answer.text}`);

  for (const age of ['9007199254740992', '-1', '1.5', '1e3', '']) {
    assert.equal(await disconnect(age), '400 {"error":"invalid value for \\"age_ms\\""}', age);
  }
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => entry.disconnectedAt),
    [null],
    'nothing was written',
  );
  assert.equal(await disconnect('0'), '200 OK', 'a connection admitted just now');
  assert.notEqual((await connectionHistory(ctx.db, commonName))[0]?.disconnectedAt ?? null, null);
});
