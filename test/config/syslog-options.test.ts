// `accounting.syslog`: collectors resolve with their defaults and their CA read at start, and
// every mistake (a TLS collector without its CA, a CA for a transport that has none, a bad
// address or header field) is refused with the option it names.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import { problemsOf } from '../support/config-problems.js';

const profiles = [
  {
    profileId: 'staff',
    displayName: 'Staff',
    hostName: 'vpn.example.org',
    wRangeFour: '10.44.0.0/24',
    wRangeSix: 'fd44::/64',
  },
];

function withCollectors(
  collectors: unknown[],
  extra: Record<string, unknown> = {},
  top: Record<string, unknown> = {},
): Record<string, unknown> {
  return { ProfileList: profiles, accounting: { syslog: { collectors, ...extra } }, ...top };
}

test('without accounting.syslog no collector is configured', () => {
  const config = resolvePortalConfig({ ProfileList: profiles }, 'portal.json');
  assert.deepEqual(config.accounting.syslog, { enterpriseNumber: 32473, collectors: [] });
});

test('collectors resolve with their defaults (Log.originatingIp on), and a TLS collector has its CA read and its name from the address', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'syslog-options-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  const config = resolvePortalConfig(
    withCollectors(
      [
        { transport: 'udp', address: '[2001:db8::5]:514' },
        {
          transport: 'tls',
          address: 'siem.example.org:6514',
          caFile: 'ca.pem',
          facility: 'local5',
          appName: 'vpn',
          hostname: 'gw1',
          structuredData: false,
          clientAddress: false,
          queueSize: 5,
        },
      ],
      { enterpriseNumber: 99999 },
      { Log: { originatingIp: true } },
    ),
    'portal.json',
    dir,
  );
  assert.equal(config.accounting.syslog.enterpriseNumber, 99999);
  assert.deepEqual(config.accounting.syslog.collectors, [
    {
      host: '2001:db8::5',
      port: 514,
      facility: 'authpriv',
      appName: 'vpn-portal',
      hostname: hostname(),
      structuredData: true,
      clientAddress: true,
      queueSize: 10_000,
      transport: 'udp',
    },
    {
      host: 'siem.example.org',
      port: 6514,
      facility: 'local5',
      appName: 'vpn',
      hostname: 'gw1',
      structuredData: false,
      clientAddress: false,
      queueSize: 5,
      transport: 'tls',
      framing: 'octet-counting',
      caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
      serverName: 'siem.example.org',
    },
  ]);
});

test("the client's address goes to a collector that does not say where the portal keeps it: with Log.originatingIp", () => {
  const told = (top: Record<string, unknown>, clientAddress?: boolean) =>
    resolvePortalConfig(
      withCollectors(
        [{ transport: 'udp', address: 'a:1', ...(clientAddress === undefined ? {} : { clientAddress }) }],
        {},
        top,
      ),
      'portal.json',
    ).accounting.syslog.collectors[0]?.clientAddress;
  assert.equal(told({}), false);
  assert.equal(told({ Log: { originatingIp: true } }), true);
  assert.equal(told({}, true), true);
  assert.equal(told({ Log: { originatingIp: true } }, false), false);
});

test('a TLS collector needs a readable CA file; CA and server name belong to TLS only; bad fields are refused', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'syslog-options-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const collectors = [
    { transport: 'tls', address: 'siem.example.org:6514' },
    { transport: 'tcp', address: 'siem.example.org:514', caFile: 'ca.pem', serverName: 'siem' },
    { transport: 'tls', address: 'siem.example.org:6514', caFile: path.join(dir, 'missing.pem') },
  ];
  const problems = problemsOf(withCollectors(collectors)).split('\n');
  assert.deepEqual(problems.slice(0, 3), [
    'portal.json: accounting.syslog.collectors[0].caFile: required for transport "tls": the CA the collector\'s certificate chains to',
    'portal.json: accounting.syslog.collectors[1].caFile: only for transport "tls", not "tcp"',
    'portal.json: accounting.syslog.collectors[1].serverName: only for transport "tls", not "tcp"',
  ]);
  assert.match(
    problems[3] ?? '',
    /^portal\.json: accounting\.syslog\.collectors\[2\]\.caFile: cannot read .*missing\.pem/,
  );

  assert.match(
    problemsOf(withCollectors([{ transport: 'tcp', address: 'siem.example.org' }])),
    /collectors\[0\]\.address: must be HOST:PORT/,
  );
  assert.match(problemsOf(withCollectors([{ transport: 'sctp', address: 'a:1' }])), /collectors\[0\]\.transport/);
  assert.match(
    problemsOf(withCollectors([{ transport: 'udp', address: 'a:1', appName: 'two words' }])),
    /appName: must be 1 to 48/,
  );
  assert.match(problemsOf(withCollectors([{ transport: 'udp', address: 'a:1', queueSize: 0 }])), /queueSize/);
  assert.match(problemsOf(withCollectors([{ transport: 'udp', address: 'a:70000' }])), /port 70000 is above 65535/);
  assert.match(problemsOf(withCollectors([{ transport: 'udp', address: 'a:1', facility: 'local9' }])), /facility/);
  assert.match(
    problemsOf(withCollectors([{ transport: 'udp', address: 'a:1', framing: 'newline' }])),
    /collectors\[0\]\.framing: only for transports "tcp" and "tls"/,
  );
});
