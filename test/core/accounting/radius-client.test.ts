// One transmission of an Accounting-Request, against a real FreeRADIUS: the response is taken as
// the answer when it comes from the server the request went to, however the configuration wrote
// that server's address (an IPv6 address not in its canonical form names the same server).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { RadiusServer } from '../../../src/config/portal-config.js';
import { transmitAccountingRequest } from '../../../src/core/accounting/radius-client.js';
import type { AccountingRecord } from '../../../src/protocol/radius.js';
import { Secret } from '../../../src/shared/secret.js';
import { detailRecord, startFreeRadius, type FreeRadius } from '../../support/freeradius.js';

const RECORD: AccountingRecord = {
  statusType: 'Start',
  sessionId: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60',
  userName: 'grace',
  framedIpAddress: '10.44.0.9',
  framedIpv6Address: 'fd44::9',
  callingStationId: null,
  nasIdentifier: 'vpn-node-0',
  nasIpAddress: null,
  eventTimestamp: 1_790_000_000,
  classes: ['employees'],
};

let radius: FreeRadius;

before(async () => {
  radius = await startFreeRadius({ host: '::1' });
});

after(async () => {
  await radius?.close();
});

test('a server configured as [0:0:0:0:0:0:0:1] answers from ::1, and that answer ends the transmission', async () => {
  // What accounting.radius.servers[].address "[0:0:0:0:0:0:0:1]:PORT" resolves to.
  const server: RadiusServer = {
    address: `[0:0:0:0:0:0:0:1]:${radius.port}`,
    host: '0:0:0:0:0:0:0:1',
    port: radius.port,
    secret: new Secret(radius.secret),
    nasIdentifier: null,
  };
  const outcome = await transmitAccountingRequest(server, RECORD, 0, 5_000, new AbortController().signal);
  const written = await detailRecord(radius, 'the Start', (entry) => entry['Acct-Session-Id'] === RECORD.sessionId);
  assert.equal(written['User-Name'], 'grace', 'the server took the record');
  assert.deepEqual(outcome, { kind: 'answered' }, "the server's Accounting-Response was taken as the answer");
});
