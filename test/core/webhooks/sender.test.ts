// The address guard of webhook requests: every range that is not the public Internet is
// refused, judged also through every IPv6 form that carries an IPv4 address (mapped,
// compatible, NAT64, 6to4, Teredo), as are the portal's own addresses;
// an allow-listed prefix lets exactly its addresses through. A huge answer is read for its first
// bytes only; a status that came in time is the answer, however slowly its body follows.
import assert from 'node:assert/strict';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sendWebhook, TargetGuard } from '../../../src/core/webhooks/sender.js';
import { startEndlessBody } from '../../support/endless-body.js';

/** A receiver on a free loopback port, closed with its connections when the test ends; answers its port. */
async function receiverOnLoopback(t: TestContext, handle: RequestListener): Promise<number> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

test('loopback, link-local, private, shared, multicast and mapped forms are refused; public addresses pass', () => {
  const guard = new TargetGuard({ allowPrivateTargets: [] }, '127.0.0.1');
  const refused: [string, string][] = [
    ['127.0.0.53', 'a loopback (127.0.0.0/8) address'],
    ['::1', 'a loopback (::1/128) address'],
    ['169.254.169.254', 'a link-local (169.254.0.0/16) address'],
    ['fe80::1', 'a link-local (fe80::/10) address'],
    ['10.0.0.1', 'a private (RFC 1918) (10.0.0.0/8) address'],
    ['172.31.255.255', 'a private (RFC 1918) (172.16.0.0/12) address'],
    ['192.168.0.1', 'a private (RFC 1918) (192.168.0.0/16) address'],
    ['100.100.100.100', 'a shared address space (CGNAT) (100.64.0.0/10) address'],
    ['fd12:3456::1', 'a unique local (ULA) (fc00::/7) address'],
    ['224.0.0.1', 'a multicast (224.0.0.0/4) address'],
    ['::ffff:10.1.2.3', 'a private (RFC 1918) (10.0.0.0/8) address'],
    ['64:ff9b::7f00:1', 'a loopback (127.0.0.0/8) address'],
    ['0.0.0.0', 'an unspecified ("this network") (0.0.0.0/8) address'],
    ['192.0.0.8', 'an IETF protocol assignments (192.0.0.0/24) address'],
  ];
  for (const [address, reason] of refused) assert.equal(guard.refusal(address), reason, address);
  for (const address of ['192.0.2.1', '8.8.8.8', '2001:db8::1', '172.32.0.1', '100.128.0.1'])
    assert.equal(guard.refusal(address), null, address);
});

test("the portal's own listen address is refused although it is public, unless allow-listed; the allow-list is exact", () => {
  const guard = new TargetGuard({ allowPrivateTargets: [] }, '198.51.100.7');
  assert.equal(guard.refusal('198.51.100.7'), "an address of the portal's own host");
  assert.equal(guard.refusal('198.51.100.8'), null);
  const allowing = new TargetGuard(
    { allowPrivateTargets: ['198.51.100.7/32', '10.20.0.0/16', 'fd00:1::/32'] },
    '198.51.100.7',
  );
  assert.equal(allowing.refusal('198.51.100.7'), null);
  assert.equal(allowing.refusal('10.20.99.1'), null);
  assert.equal(allowing.refusal('::ffff:10.20.99.1'), null, 'an IPv4-mapped form of an allowed address');
  assert.equal(allowing.refusal('10.21.0.1'), 'a private (RFC 1918) (10.0.0.0/8) address');
  assert.equal(allowing.refusal('fd00:1::5'), null);
  assert.equal(allowing.refusal('fd00:2::5'), 'a unique local (ULA) (fc00::/7) address');
});

test('an IPv4 address inside an IPv6 one (compatible, NAT64 /96 and /48, 6to4, Teredo server and client) is judged as itself', () => {
  const guard = new TargetGuard({ allowPrivateTargets: [] }, '198.51.100.7');
  const loopback = 'a loopback (127.0.0.0/8) address';
  const refused: [string, string][] = [
    ['::127.0.0.1', loopback],
    ['::a9fe:a9fe', 'a link-local (169.254.0.0/16) address'],
    ['2002:7f00:1::', loopback],
    ['2002:a9fe:a9fe:1:2:3:4:5', 'a link-local (169.254.0.0/16) address'],
    ['64:ff9b::10.1.2.3', 'a private (RFC 1918) (10.0.0.0/8) address'],
    // RFC 6052 /48: 127.0 in bits 48–63, the u-octet, then .0.1 in bits 72–87.
    ['64:ff9b:1:7f00:0:100::', loopback],
    ['64:ff9b:1:a9fe:a9:fe00::', 'a link-local (169.254.0.0/16) address'],
    // Teredo: the server in bits 32–63, the client's address inverted in the last 32 bits.
    ['2001:0:7f00:1::', loopback],
    ['2001:0:808:808:0:0:80ff:fffe', loopback],
    ['2001:0:808:808:0:0:f5fe:fffe', 'a private (RFC 1918) (10.0.0.0/8) address'],
    ['::198.51.100.7', "an address of the portal's own host"],
    ['2002:c633:6407::1', "an address of the portal's own host"],
  ];
  for (const [address, reason] of refused) assert.equal(guard.refusal(address), reason, address);
  // Public IPv4 inside: as public as the address itself (Teredo: both server and client public).
  for (const address of [
    '::8.8.8.8',
    '2002:808:808::1',
    '64:ff9b::8.8.8.8',
    '64:ff9b:1:808:8:800::',
    '2001:0:808:808:0:0:f7f7:f7f7',
  ]) {
    assert.equal(guard.refusal(address), null, address);
  }
  const allowing = new TargetGuard({ allowPrivateTargets: ['10.20.0.0/16'] }, '198.51.100.7');
  assert.equal(allowing.refusal('2002:a14:6301::1'), null, 'a 6to4 form of an allowed address');
  assert.equal(allowing.refusal('2002:a15:1::1'), 'a private (RFC 1918) (10.0.0.0/8) address');
});

test('a receiver answering 200 MiB is read for its first bytes only: the portal hangs up, the receiver writes little', async (t) => {
  const receiver = await startEndlessBody(200 * 1024 * 1024, 'text/plain');
  t.after(() => receiver.close());
  const guard = new TargetGuard({ allowPrivateTargets: ['127.0.0.0/8'] }, '198.51.100.7');
  const result = await sendWebhook(
    { url: new URL(`${receiver.url}/hook`), headers: { 'content-type': 'application/json' }, body: '{}' },
    guard,
    10_000,
    new AbortController().signal,
  );
  assert.equal(result.kind, 'answered');
  assert.equal(result.kind === 'answered' ? result.excerpt.length : 0, 256);
  const sent = await receiver.closed();
  assert.ok(sent < 16 * 1024 * 1024, `the receiver wrote ${sent} bytes before the portal hung up`);
});

test('a receiver that never answers is given up on after the timeout, even when the garbage collector runs meanwhile', async (t) => {
  // A server that takes the request and never answers.
  const port = await receiverOnLoopback(t, () => {});
  const guard = new TargetGuard({ allowPrivateTargets: ['127.0.0.0/8'] }, '198.51.100.7');
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  const collecting = setInterval(collect, 20);
  t.after(() => clearInterval(collecting));
  const sent = sendWebhook(
    { url: new URL(`http://127.0.0.1:${port}/hook`), headers: { 'content-type': 'application/json' }, body: '{}' },
    guard,
    300,
    new AbortController().signal,
  );
  const stuck = sleep(10_000).then(() => 'still waiting after 10 s' as const);
  const result = await Promise.race([sent, stuck]);
  assert.deepEqual(result, { kind: 'failed', reason: 'no answer within 0.3 s' });
});

test('a receiver whose 2xx came in time has answered, though its body still trickles in at the deadline: the excerpt is what came', async (t) => {
  // Headers and a first line at once, then a byte every 100 ms that never ends the body.
  const port = await receiverOnLoopback(t, (request, response) => {
    request.resume();
    response.writeHead(202, { 'content-type': 'text/plain' });
    response.write('queued;');
    const trickle = setInterval(() => response.write('.'), 100);
    response.on('close', () => clearInterval(trickle));
  });
  const guard = new TargetGuard({ allowPrivateTargets: ['127.0.0.0/8'] }, '198.51.100.7');
  const started = Date.now();
  const result = await sendWebhook(
    { url: new URL(`http://127.0.0.1:${port}/hook`), headers: { 'content-type': 'application/json' }, body: '{}' },
    guard,
    1_000,
    new AbortController().signal,
  );
  const waited = Date.now() - started;
  assert.equal(result.kind, 'answered', JSON.stringify(result));
  assert.equal(result.kind === 'answered' ? result.status : 0, 202);
  assert.match(result.kind === 'answered' ? result.excerpt : '', /^queued;\.{3,}$/);
  assert.ok(waited >= 1_000 && waited < 3_000, `the body was read until the deadline, no longer (${waited} ms)`);
});
