// eduVPN 3.x logs a WireGuard "connection" when it creates the configuration and ends it when it
// deletes it (the connect hook of create): every live WireGuard configuration has an open
// connection_log row there, which says nothing about use (docs/sessions-and-statistics.md). The
// import brings those rows as they are; here an open WireGuard row is a live session of a
// device. A device that is simply idle after the move must not get a "session" ended for it
// (with a session.ended event to the webhooks, the connect script, syslog and RADIUS), nor
// eduVPN's record of when the configuration was made turned into a session with an end and
// byte counts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { importEduVpn, type ImportContext } from '../../../src/core/importing/index.js';
import { observeWireGuardSessions } from '../../../src/core/sessions/wireguard.js';
import type { PortalEvent } from '../../../src/core/events.js';
import { asNodeNumber, asUserId } from '../../../src/shared/ids.js';
import { eduVpnPeer, eduVpnUser, emptyRecords, inMemoryDeployment } from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startImportPortal();
  ctx = portal.portal.ctx;
});
after(() => portal.close());

test("eduVPN's open WireGuard connection_log row (made at create) does not become a session here that an idle device ends", async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('alice')];
  const peer = eduVpnPeer('alice', 0);
  records.wireGuardPeers = [peer];
  // As eduVPN 3.4.1 writes it at create: open until the configuration is deleted.
  records.connectionLog = [
    {
      userId: asUserId('alice'),
      writtenUserId: asUserId('alice'),
      profileId: peer.profileId,
      vpnProto: 'wireguard',
      connectionId: peer.publicKey,
      ipFour: peer.ipFour,
      ipSix: peer.ipSix,
      connectedAt: peer.createdAt,
      disconnectedAt: null,
      bytesIn: null,
      bytesOut: null,
    },
  ];
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(outcome.applied?.inserted.connectionLog, 1);

  const ended: PortalEvent[] = [];
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  // The first pass after the move: the device is on the node, idle (no handshake since the node's start).
  await observeWireGuardSessions(portal.portal.ctx, asNodeNumber(0), [
    {
      publicKey: peer.publicKey,
      canonicalKey: true,
      ipNet: [`${peer.ipFour}/32`, `${peer.ipSix}/128`],
      lastHandshakeTime: null,
      onlineSince: null,
      bytesIn: 0,
      bytesOut: 0,
      endpoint: null,
    },
  ]);
  assert.deepEqual(
    ended.map((event) => (event.type === 'session.ended' ? [event.connectionId, event.cause] : [])),
    [],
    'no session ended for a device that never had one here',
  );
});
