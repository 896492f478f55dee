// Which configuration format `create` hands out: the client's Accept header (RFC 9110 media
// ranges, q values, wildcards) against what the profile offers, in the server's order of
// preference (reference §5.3), with prefer_tcp moving TCP-capable formats first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  chooseFormats,
  describeNoCommonFormat,
  MIME_TYPES,
  parseAccept,
  type OfferedFormat,
} from '../../../src/core/issuing/protocol-selection.js';

const OPENVPN = MIME_TYPES.openvpn;
const WIREGUARD = MIME_TYPES.wireguard;
const WIREGUARD_TCP = MIME_TYPES['wireguard+tcp'];
const APPLE = MIME_TYPES.apple;

// Server preference lists as the reference builds them (§5.3): OpenVPN (UDP and TCP ports) and
// WireGuard, in preferredProto order; WireGuard over TCP only with the proxy enabled.
const openvpnBoth: OfferedFormat = { format: 'openvpn', tcp: true };
const openvpnUdpOnly: OfferedFormat = { format: 'openvpn', tcp: false };
const wireguard: OfferedFormat = { format: 'wireguard', tcp: false };
const wireguardTcp: OfferedFormat = { format: 'wireguard+tcp', tcp: true };
const apple: OfferedFormat = { format: 'apple', tcp: false };

test('the reference orderings: preferredProto first, prefer_tcp moves TCP-capable formats ahead', () => {
  // Default profile (preferredProto openvpn): openvpn, then wireguard — with or without prefer_tcp.
  assert.deepEqual(chooseFormats(undefined, [openvpnBoth, wireguard], false), ['openvpn', 'wireguard']);
  assert.deepEqual(chooseFormats(undefined, [openvpnBoth, wireguard], true), ['openvpn', 'wireguard']);
  // preferredProto wireguard: wireguard first; prefer_tcp puts OpenVPN (which has TCP ports) ahead.
  assert.deepEqual(chooseFormats(undefined, [wireguard, openvpnBoth], false), ['wireguard', 'openvpn']);
  assert.deepEqual(chooseFormats(undefined, [wireguard, openvpnBoth], true), ['openvpn', 'wireguard']);
  // ... unless OpenVPN has no TCP port: the preference changes nothing.
  assert.deepEqual(chooseFormats(undefined, [wireguard, openvpnUdpOnly], true), ['wireguard', 'openvpn']);
  // WireGuard-only profile: prefer_tcp is ignored.
  assert.deepEqual(chooseFormats(undefined, [wireguard], true), ['wireguard']);
});

test('an absent, empty or wildcard Accept never chooses WireGuard over TCP or the Apple profile', () => {
  const offered = [wireguard, wireguardTcp, openvpnBoth, apple];
  for (const accept of [undefined, '', '   ', '*/*', 'application/*', '*/*;q=0.5', 'application/*, */*']) {
    assert.deepEqual(chooseFormats(accept, offered, false), ['wireguard', 'openvpn'], String(accept));
    // Not even when TCP is preferred: wireguard+tcp has to be named.
    assert.deepEqual(chooseFormats(accept, offered, true), ['openvpn', 'wireguard'], String(accept));
  }
  // A server that only offers WireGuard over TCP has nothing for such a client.
  assert.deepEqual(chooseFormats(undefined, [wireguardTcp], false), []);
  assert.deepEqual(chooseFormats('*/*', [wireguardTcp, apple], false), []);
});

test("formats named explicitly are chosen, in the server's order, including the explicit-only ones", () => {
  const offered = [wireguard, wireguardTcp, openvpnBoth, apple];
  assert.deepEqual(chooseFormats(WIREGUARD_TCP, offered, false), ['wireguard+tcp']);
  assert.deepEqual(chooseFormats(APPLE, offered, false), ['apple']);
  assert.deepEqual(chooseFormats(OPENVPN, offered, false), ['openvpn']);
  // The order of the client's list does not matter at equal quality; the server's does.
  assert.deepEqual(chooseFormats(`${OPENVPN}, ${WIREGUARD_TCP}, ${WIREGUARD}`, offered, false), [
    'wireguard',
    'wireguard+tcp',
    'openvpn',
  ]);
  assert.deepEqual(chooseFormats(`${WIREGUARD}, ${OPENVPN}, ${WIREGUARD_TCP}`, offered, true), [
    'wireguard+tcp',
    'openvpn',
    'wireguard',
  ]);
  // The reference's exact-token behaviour is the special case without parameters.
  assert.deepEqual(chooseFormats(`${OPENVPN},${WIREGUARD}`, [openvpnBoth, wireguard], false), ['openvpn', 'wireguard']);
  // A wildcard next to a named explicit-only format: the named one counts, the wildcard adds the rest.
  assert.deepEqual(chooseFormats(`${WIREGUARD_TCP}, */*`, offered, false), ['wireguard', 'wireguard+tcp', 'openvpn']);
});

test("q values rank the client's wishes above the server's order; q=0 refuses a format", () => {
  const offered = [openvpnBoth, wireguard];
  assert.deepEqual(chooseFormats(`${OPENVPN};q=0.5, ${WIREGUARD}`, offered, false), ['wireguard', 'openvpn']);
  assert.deepEqual(chooseFormats(`${OPENVPN};q=0.5, ${WIREGUARD};q=0.9`, offered, true), ['wireguard', 'openvpn']);
  assert.deepEqual(chooseFormats(`${OPENVPN};q=0, ${WIREGUARD}`, offered, false), ['wireguard']);
  assert.deepEqual(chooseFormats(`*/*, ${OPENVPN};q=0`, offered, false), ['wireguard']);
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0`, [wireguard], false), []);
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0.000`, [wireguard], false), []);
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0.001`, [wireguard], false), ['wireguard']);
  // The most specific range decides: an exact q=0 is not overridden by a wildcard.
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0, */*`, [wireguard], false), []);
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0, application/*`, [wireguard], false), []);
  // application/* is more specific than */*.
  assert.deepEqual(chooseFormats('application/*;q=0.1, */*;q=0.9', offered, false), ['openvpn', 'wireguard']);
  assert.deepEqual(chooseFormats(`application/*;q=0.1, ${WIREGUARD};q=0.2`, offered, false), ['wireguard', 'openvpn']);
  // Equal q values keep the server's order.
  assert.deepEqual(chooseFormats(`${WIREGUARD};q=0.7, ${OPENVPN};q=0.7`, offered, false), ['openvpn', 'wireguard']);
});

test('types the server does not serve, and malformed entries, choose nothing', () => {
  const offered = [wireguard];
  for (const accept of [
    'text/html',
    'text/*',
    OPENVPN,
    WIREGUARD_TCP,
    APPLE,
    `${OPENVPN}, ${APPLE}`,
    'garbage',
    'application',
    ';;;',
  ]) {
    assert.deepEqual(chooseFormats(accept, offered, false), [], accept);
  }
  // A malformed entry next to a good one is ignored.
  assert.deepEqual(chooseFormats(`garbage, ${WIREGUARD}`, offered, false), ['wireguard']);
});

test('Accept parsing: case, whitespace, parameters and q values', () => {
  assert.deepEqual(parseAccept(' Application/X-WireGuard-Profile ; charset=utf-8 ; Q=0.5 ,*/*'), [
    { type: 'application', subtype: 'x-wireguard-profile', q: 0.5 },
    { type: '*', subtype: '*', q: 1 },
  ]);
  assert.deepEqual(parseAccept('text/html;level=1, application/x-wireguard+tcp-profile;q=0.25'), [
    { type: 'text', subtype: 'html', q: 1 },
    { type: 'application', subtype: 'x-wireguard+tcp-profile', q: 0.25 },
  ]);
  assert.deepEqual(parseAccept('no-slash, /missing-type, type/'), []);
  assert.deepEqual(chooseFormats('APPLICATION/X-WIREGUARD-PROFILE', [wireguard], false), ['wireguard']);
});

test('the 406 message names what the client asked for and what the server offers', () => {
  assert.equal(
    describeNoCommonFormat(OPENVPN, [wireguard]),
    `no common VPN protocol [CLIENT=${OPENVPN} SERVER=${WIREGUARD}]`,
  );
  assert.equal(
    describeNoCommonFormat(undefined, [wireguardTcp]),
    `no common VPN protocol [CLIENT=None SERVER=${WIREGUARD_TCP}]`,
  );
  assert.equal(describeNoCommonFormat('text/html', []), 'no common VPN protocol [CLIENT=text/html SERVER=None]');
  assert.equal(
    describeNoCommonFormat('*/*', [openvpnBoth, wireguard]),
    `no common VPN protocol [CLIENT=*/* SERVER=${OPENVPN},${WIREGUARD}]`,
  );
});
