// The OpenVPN server files in the portal's server_config answer, as the agent reads and checks them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkServerFile, socketPathOf } from '../../../src/agent/openvpn/server-file.js';
import { parseServerConfig, ServerConfigFormatError } from '../../../src/agent/node-assignment.js';

describe("the OpenVPN files in the portal's server_config answer", () => {
  const entry = {
    name: 'employees-0.conf',
    profileId: 'employees',
    processNumber: 0,
    proto: 'udp',
    port: 1194,
    content: 'dev tun0\n<key>\nSECRET-KEY\n</key>',
  };

  test('each entry is read, and the content never prints', () => {
    const config = parseServerConfig({ wireguard: null, openvpn: [entry] });
    const [file] = config.openvpn ?? [];
    assert.equal(file?.name, 'employees-0.conf');
    assert.equal(file?.content.reveal(), entry.content);
    assert.equal(JSON.stringify(config).includes('SECRET-KEY'), false);
  });

  test('an answer without the list (older portals) has no OpenVPN servers', () => {
    assert.equal(parseServerConfig({ wireguard: null }).openvpn, undefined);
    assert.deepEqual(parseServerConfig({ wireguard: null, openvpn: [] }).openvpn, []);
  });

  test('entries that do not fit are refused, naming the field and not the content', () => {
    const refused: [unknown, RegExp][] = [
      [[{ ...entry, name: '../evil-0.conf' }], /openvpn\.0\.name/],
      [[{ ...entry, name: 'employees-1.conf' }], /openvpn\.0\.name: name must be <profileId>-<processNumber>\.conf/],
      [[{ ...entry, proto: 'udp6' }], /openvpn\.0\.proto/],
      [[entry, entry], /openvpn: file names must be unique/],
    ];
    for (const [openvpn, pattern] of refused) {
      assert.throws(
        () => parseServerConfig({ wireguard: null, openvpn }),
        (error: unknown) => {
          assert.ok(error instanceof ServerConfigFormatError, `a format error, not ${String(error)}`);
          assert.match(error.message, pattern);
          assert.equal(error.message.includes('SECRET-KEY'), false, 'the content is not repeated');
          return true;
        },
      );
    }
  });

  test('a file without the management socket or management-client-auth is not run', () => {
    const socket = socketPathOf('/run/vpn-portal-node/openvpn', { name: 'employees-0.conf' });
    assert.equal(socket, '/run/vpn-portal-node/openvpn/employees-0.sock');
    const good = [`management ${socket} unix`, 'management-client-auth', 'auth-user-pass-optional'].join('\n');
    assert.deepEqual(checkServerFile(good, socket), { errors: [], warnings: [] });

    const elsewhere = checkServerFile(good.replace(socket, '/tmp/other.sock'), socket);
    assert.match(
      elsewhere.errors.join(),
      /no "management \/run\/vpn-portal-node\/openvpn\/employees-0\.sock unix" line/,
    );
    const open = checkServerFile(`management ${socket} unix\nauth-user-pass-optional`, socket);
    assert.match(open.errors.join(), /management-client-auth/);
    const commented = checkServerFile(
      `management ${socket} unix\n# management-client-auth\n<key>\nmanagement-client-auth\n</key>`,
      socket,
    );
    assert.match(commented.errors.join(), /management-client-auth/, 'comments and inline blocks do not count');
    assert.match(
      checkServerFile(`management ${socket} unix\nmanagement-client-auth`, socket).warnings.join(),
      /auth-user-pass-optional/,
    );
    const long = `/run/${'x'.repeat(100)}`;
    assert.match(
      checkServerFile(good, socketPathOf(long, { name: 'employees-0.conf' })).errors.join(),
      /longer than 107 bytes/,
    );
  });
});
