// What OpenVPN's management interface answers, as the agent reads it: client notifications, status, quoting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { quoteArgument } from '../../../src/agent/openvpn/management.js';
import { parseStatusClients } from '../../../src/agent/openvpn/status.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';
const CN_BOB = 'lOo4ma+ta8c1AJv4q83VA1P84GjmW2Wq89cJMu4dm4A=';

describe('answers of the management interface', () => {
  // As OpenVPN 2.6.14 answers `status 3`.
  const status = [
    'TITLE\tOpenVPN 2.6.14 x86_64-pc-linux-gnu [SSL (OpenSSL)] [LZO] [LZ4] [EPOLL] [PKCS11] [MH/PKTINFO] [AEAD] [DCO]',
    'TIME\t2026-11-22 05:37:31\t1795325851',
    'HEADER\tCLIENT_LIST\tCommon Name\tReal Address\tVirtual Address\tVirtual IPv6 Address\tBytes Received\tBytes Sent\tConnected Since\tConnected Since (time_t)\tUsername\tClient ID\tPeer ID\tData Channel Cipher',
    `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:53128\t10.77.0.9\tfd77::9\t2187\t2230\t2026-11-22 05:37:28\t1795325848\tUNDEF\t1\t0\tAES-256-GCM`,
    `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:53129\t\t\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t4\t1\tAES-256-GCM`,
    'HEADER\tROUTING_TABLE\tVirtual Address\tCommon Name\tReal Address\tLast Ref\tLast Ref (time_t)',
    `ROUTING_TABLE\t10.77.0.9\t${CN_ALICE}\t198.18.250.2:53128\t2026-11-22 05:37:29\t1795325849`,
    'GLOBAL_STATS\tMax bcast/mcast queue length\t1',
  ];

  test('status 3 lists the clients by the column names of its header', () => {
    assert.deepEqual(parseStatusClients(status), [
      { commonName: CN_ALICE, cid: 1, ipFour: '10.77.0.9', ipSix: 'fd77::9', bytesReceived: 2187, bytesSent: 2230 },
      { commonName: CN_BOB, cid: 4, ipFour: null, ipSix: null, bytesReceived: 10, bytesSent: 20 },
    ]);
  });

  test('a header without a needed column is an error, not a guess', () => {
    const withoutId = status.map((line) => line.replace('\tClient ID', ''));
    assert.throws(() => parseStatusClients(withoutId), /no "Client ID" column/);
    assert.throws(() => parseStatusClients(['END']), /no HEADER line/);
  });

  test("arguments are quoted the way OpenVPN's lexer reads them, and line breaks are refused", () => {
    assert.equal(quoteArgument('refused by the portal'), '"refused by the portal"');
    assert.equal(quoteArgument('a "b" \\c'), '"a \\"b\\" \\\\c"');
    assert.throws(() => quoteArgument('one\nkill 1'), /line breaks/);
  });
});
