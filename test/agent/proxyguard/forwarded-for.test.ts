// Who the relay names as a tunnel's client when a reverse proxy stands in front of it: the
// client a trusted proxy names in X-Forwarded-For, never one an untrusted peer claims, and
// the proxy itself when what it sent is no address.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forwardedOrigin, formatOrigin, type TcpOrigin } from '../../../src/agent/proxyguard/forwarded-for.js';
import { AddressAllowList } from '../../../src/net/address-allow-list.js';

const NGINX: TcpOrigin = { address: '127.0.0.1', port: 40_000 };
const TRUSTED = new AddressAllowList(['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8']);

const clientOf = (peer: TcpOrigin, header: unknown, trusted = TRUSTED): string =>
  formatOrigin(forwardedOrigin(peer, header, trusted).origin);

describe('the client behind a reverse proxy', () => {
  test('a trusted proxy names the client in X-Forwarded-For; its port is unknown, so 0', () => {
    assert.equal(clientOf(NGINX, '198.51.100.7'), '198.51.100.7:0');
    assert.equal(clientOf(NGINX, ' 2001:db8::7 '), '[2001:db8::7]:0');
    assert.equal(clientOf(NGINX, '[2001:db8::7]'), '[2001:db8::7]:0', 'in brackets, as some proxies write it');
    assert.equal(clientOf(NGINX, '::ffff:198.51.100.7'), '198.51.100.7:0', 'IPv4-mapped: by its IPv4 address');
    assert.equal(clientOf({ address: 'fd00::1', port: 40_000 }, '198.51.100.7'), '198.51.100.7:0');
  });

  test('without the header, or from a peer that is no trusted proxy, the peer is the client', () => {
    assert.equal(clientOf(NGINX, undefined), '127.0.0.1:40000');
    const stranger: TcpOrigin = { address: '192.0.2.1', port: 50_000 };
    assert.equal(clientOf(stranger, '198.51.100.7'), '192.0.2.1:50000');
    assert.equal(
      clientOf(NGINX, '198.51.100.7', new AddressAllowList([])),
      '127.0.0.1:40000',
      'none trusted: the default',
    );
  });

  test('the right-most entry that is no trusted proxy is the client; what the client sent left of it counts for nothing', () => {
    assert.equal(clientOf(NGINX, '192.0.2.66, 203.0.113.9, 10.1.2.3'), '203.0.113.9:0');
    assert.equal(clientOf(NGINX, '10.9.9.9, 10.1.2.3'), '10.9.9.9:0', 'all trusted: the left-most one');
    assert.equal(
      clientOf(NGINX, ['192.0.2.66', '203.0.113.9']),
      '203.0.113.9:0',
      'repeated headers count as one list, in order',
    );
  });

  test('an entry that is no address ends the walk at the proxy that passed it on, and is reported', () => {
    for (const header of ['unknown', '', '198.51.100.7:443', 'fe80::1%eth0', '198.51.100.7,,']) {
      const { origin, malformed } = forwardedOrigin(NGINX, header, TRUSTED);
      assert.deepEqual(origin, NGINX, `with ${JSON.stringify(header)}`);
      assert.notEqual(malformed, null, `with ${JSON.stringify(header)}`);
    }
    const behindTwo = forwardedOrigin(NGINX, 'garbage, 10.1.2.3', TRUSTED);
    assert.deepEqual(behindTwo, { origin: { address: '10.1.2.3', port: 0 }, malformed: 'garbage' });
    assert.deepEqual(forwardedOrigin(NGINX, 42, TRUSTED), { origin: NGINX, malformed: null }, 'no header text at all');
    assert.deepEqual(
      forwardedOrigin(NGINX, 'garbage, 198.51.100.7', TRUSTED),
      { origin: { address: '198.51.100.7', port: 0 }, malformed: null },
      'garbage left of the client is what the client sent, never read',
    );
  });
});
