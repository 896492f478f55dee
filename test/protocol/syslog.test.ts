// RFC 5424 messages as the portal writes them: the header, the escaping of structured data, the
// octet-counted framing, and the session text a firewall parses with one regular expression
// (docs/accountability.md), every message within its bound in bytes (a NAT change in parts where
// its addresses need them). The collector and session tests have a real rsyslog read them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  NAT_CHANGE_TEXT_PATTERN,
  MAX_MESSAGE_BYTES,
  natChangeMessages,
  natChangeText,
  publicAddressRanges,
  escapeParamValue,
  formatSyslogMessage,
  MAX_SESSION_TEXT_BYTES,
  newlineFramed,
  octetCounted,
  SESSION_TEXT_PATTERN,
  sessionMessage,
  sessionText,
  type NatChangeRecord,
  type SessionRecord,
} from '../../src/protocol/syslog.js';

const at = new Date('2026-11-29T04:18:20.123Z');

const alice: SessionRecord = {
  event: 'start',
  userId: 'alice@example.org',
  deviceId: null,
  profileId: 'staff',
  nodeNumber: 0,
  vpnProto: 'wireguard',
  connectionId: 'kK3P/ab+cd=',
  ipFour: '10.60.0.2',
  ipSix: 'fd60::2',
  clientAddress: '198.51.100.7',
  nat: null,
};

const origin = {
  facility: 'authpriv',
  hostname: 'portal.example.org',
  appName: 'vpn-portal',
  procId: '4242',
  enterpriseNumber: 32473,
  structuredData: true,
} as const;

test('a session start is one RFC 5424 message: PRI of the facility at informational, the header, the element and the text', () => {
  assert.equal(
    sessionMessage(alice, origin, at),
    '<86>1 2026-11-29T04:18:20.123Z portal.example.org vpn-portal 4242 SESSION_START ' +
      '[vpnSession@32473 event="start" user_id="alice@example.org" profile_id="staff" node_number="0" vpn_proto="wireguard" ' +
      'connection_id="kK3P/ab+cd=" ip_four="10.60.0.2" ip_six="fd60::2" originating_ip="198.51.100.7"] ' +
      'vpn session start user=alice@example.org device=- profile=staff node=0 protocol=wireguard ipv4=10.60.0.2 ' +
      'ipv6=fd60::2 client=198.51.100.7 connection=kK3P/ab+cd= public=- ports=-',
  );
});

test('a stop has its own MSGID and the byte counts in the structured data, and the same text fields', () => {
  const stop: SessionRecord = { ...alice, event: 'stop', deviceId: 'dev-1', bytes: { in: 1200, out: 3400 } };
  const message = sessionMessage(stop, { ...origin, facility: 'local3' }, at);
  assert.match(message, /^<158>1 \S+ \S+ \S+ \S+ SESSION_STOP \[/);
  assert.match(message, / device_id="dev-1" .* bytes_in="1200" bytes_out="3400"\] vpn session stop /);
  assert.deepEqual(SESSION_TEXT_PATTERN.exec(sessionText(stop))?.slice(1), [
    'stop',
    'alice@example.org',
    'dev-1',
    'staff',
    '0',
    'wireguard',
    '10.60.0.2',
    'fd60::2',
    '198.51.100.7',
    'kK3P/ab+cd=',
    '-',
    '-',
  ]);
});

test('behind deterministic NAT a session names its public address and port block, in the structured data and at the end of the text', () => {
  const natted: SessionRecord = { ...alice, nat: { publicAddress: '203.0.113.1', firstPort: 3024, lastPort: 5023 } };
  const message = sessionMessage(natted, origin, at);
  assert.match(
    message,
    / originating_ip="198\.51\.100\.7" nat_public_ip="203\.0\.113\.1" nat_port_first="3024" nat_port_last="5023"\] /,
  );
  assert.match(message, / connection=kK3P\/ab\+cd= public=203\.0\.113\.1 ports=3024-5023$/);
  assert.deepEqual(SESSION_TEXT_PATTERN.exec(message)?.slice(10), ['kK3P/ab+cd=', '203.0.113.1', '3024-5023']);
});

function change(publicAddresses: readonly string[]): NatChangeRecord {
  return { nodeNumber: 0, mode: 'deterministic', publicAddresses, portsPerClient: 64, appliedAt: at };
}

test('a NAT mapping change is one message of its own: MSGID NAT_CHANGE at notice, its element and its fixed text', () => {
  const change: NatChangeRecord = {
    nodeNumber: 2,
    mode: 'deterministic',
    publicAddresses: ['203.0.113.1', '203.0.113.2'],
    portsPerClient: 2000,
    appliedAt: new Date('2026-11-29T04:00:00.000Z'),
  };
  assert.equal(
    natChangeMessages(change, origin, at).join('\n'),
    '<85>1 2026-11-29T04:18:20.123Z portal.example.org vpn-portal 4242 NAT_CHANGE ' +
      '[vpnNat@32473 node_number="2" mode="deterministic" public_addresses="203.0.113.1,203.0.113.2" ' +
      'ports_per_client="2000" applied_at="2026-11-29T04:00:00.000Z" part="1" parts="1"] ' +
      'vpn nat change node=2 mode=deterministic public=203.0.113.1,203.0.113.2 ports_per_client=2000 ' +
      'applied=2026-11-29T04:00:00.000Z part=1/1',
  );
  const masquerade = natChangeText({ ...change, mode: 'masquerade', publicAddresses: [], portsPerClient: null });
  assert.deepEqual(NAT_CHANGE_TEXT_PATTERN.exec(masquerade)?.slice(1), [
    '2',
    'masquerade',
    '-',
    '-',
    '2026-11-29T04:00:00.000Z',
    '1',
    '1',
  ]);
});

test('a NAT change names runs of three or more consecutive public addresses as ranges, in numeric order', () => {
  assert.deepEqual(
    publicAddressRanges(['198.18.0.9', '198.18.0.2', '198.18.0.1', '198.18.0.3', '198.18.0.10', '198.18.0.5']),
    ['198.18.0.1-198.18.0.3', '198.18.0.5', '198.18.0.9', '198.18.0.10'],
  );
  const pool = Array.from({ length: 1024 }, (_, index) => `198.18.${index >> 8}.${index & 255}`);
  const messages = natChangeMessages({ ...change(pool) }, origin, at);
  assert.equal(messages.length, 1, 'a pool of 1,024 in one block is one message');
  assert.match(messages[0] ?? '', / public=198\.18\.0\.0-198\.18\.3\.255 ports_per_client=64 applied=\S+ part=1\/1$/);
  assert.ok((messages[0] ?? '').includes('public_addresses="198.18.0.0-198.18.3.255"'));
});

test('a NAT change whose addresses make no ranges is sent in parts, each within the bound, listing in order every address in its text and structured data alike', () => {
  // 1,024 addresses, every other one: 15 KB of them.
  const pool = Array.from({ length: 1024 }, (_, index) => `198.18.${index >> 7}.${(index & 127) * 2}`);
  const messages = natChangeMessages(change(pool), origin, at);
  assert.ok(messages.length > 1, `${messages.length} parts`);
  const listed: string[] = [];
  for (const [index, message] of messages.entries()) {
    assert.ok(Buffer.byteLength(message) <= MAX_MESSAGE_BYTES, `${Buffer.byteLength(message)} bytes`);
    const groups = NAT_CHANGE_TEXT_PATTERN.exec(message);
    assert.deepEqual(groups?.slice(6), [String(index + 1), String(messages.length)]);
    assert.ok(message.includes(`public_addresses="${groups?.[3]}" ports_per_client="64"`));
    assert.ok(message.includes(`part="${index + 1}" parts="${messages.length}"`));
    listed.push(...(groups?.[3]?.split(',') ?? []));
  }
  assert.deepEqual(listed, pool);
});

test('a session message stays within the bound whatever its values hold, cutting the longest values of its structured data only when it must', () => {
  const usual = sessionMessage(alice, origin, at);
  assert.ok(Buffer.byteLength(usual) < 1000);
  assert.ok(usual.includes('user_id="alice@example.org"'));
  // 255 control characters (six bytes each, encoded), a profile id of 10,000 characters and the longest hostname.
  const worst = sessionMessage(
    { ...alice, userId: '\u0085'.repeat(255), profileId: 'p'.repeat(10_000), connectionId: 'c'.repeat(3_000) },
    { ...origin, hostname: 'h'.repeat(255) },
    at,
  );
  assert.ok(Buffer.byteLength(worst) <= MAX_SESSION_TEXT_BYTES * 4 && Buffer.byteLength(worst) <= MAX_MESSAGE_BYTES);
  assert.ok(worst.includes(`user_id="${'%C2%85'.repeat(255)}"`), 'the user id whole: the longer values were cut');
  assert.match(worst, / profile_id="p+" /);
  assert.equal(SESSION_TEXT_PATTERN.exec(worst)?.[2], '%C2%85'.repeat(42), 'the text as ever');
});

test('a parameter value escapes ", \\ and ] with a backslash and keeps everything else, UTF-8 included', () => {
  assert.equal(escapeParamValue('a"b\\c]d[e=f jü'), 'a\\"b\\\\c\\]d[e=f jü');
  const message = sessionMessage({ ...alice, userId: 'x"]\\y' }, origin, at);
  assert.ok(message.includes('user_id="x\\"\\]\\\\y"'), message);
});

test('a user id with a line break cannot forge a second record: the message stays one line, the break percent-encoded', () => {
  const forged =
    '<86>1 2026-11-29T04:18:21.000Z portal.example.org vpn-portal 4242 SESSION_START - vpn session start ' +
    'user=bob@example.org device=- profile=staff node=0 protocol=wireguard ipv4=10.60.0.9 ipv6=- client=- ' +
    'connection=x public=- ports=-';
  const mallory = `mallory\n${forged}\r\u0085\u2028\u0000\u001b[2J\u007f`;
  const message = sessionMessage({ ...alice, userId: mallory }, origin, at);
  assert.doesNotMatch(message, /[\p{Cc}\u2028\u2029]/u);
  assert.equal(message.split(/\r\n|[\n\r\u0085\u2028\u2029]/).length, 1);
  assert.ok(message.includes(`user_id="mallory%0A<86>1 2026-11-29T04:18:21.000Z `), message);
  assert.ok(message.includes('ports=-%0D%C2%85%E2%80%A8%00%1B[2J%7F" profile_id="staff"'), message);
});

test('a user id holding %0A and one holding a line break are told apart: % is percent-encoded too, and each decodes back', () => {
  const userIdOf = (userId: string) =>
    /user_id="((?:[^"\\]|\\.)*)"/.exec(sessionMessage({ ...alice, userId }, origin, at))?.[1] ?? '';
  const ids = ['a%0Ab', 'a\nb', 'a%250Ab', 'a%25\n%b', '100%'];
  const values = ids.map(userIdOf);
  assert.deepEqual(values, ['a%250Ab', 'a%0Ab', 'a%25250Ab', 'a%2525%0A%25b', '100%25']);
  assert.equal(new Set(values).size, ids.length, 'every id its own value');
  // What a receiver does: undo RFC 5424's backslashes, then the percent-encoding.
  const decoded = values.map((value) => decodeURIComponent(value.replace(/\\(.)/g, '$1')));
  assert.deepEqual(decoded, ids);
  assert.equal(escapeParamValue('x%"]\\\u2028y'), 'x%25\\"\\]\\\\%E2%80%A8y');
});

test('the text is printable ASCII: spaces, %, a lone - and non-ASCII are percent-encoded, absent values are -', () => {
  const text = sessionText({
    ...alice,
    userId: 'jürgen van % dam',
    deviceId: '-',
    clientAddress: null,
    ipSix: '',
  });
  assert.equal(
    text,
    'vpn session start user=j%C3%BCrgen%20van%20%25%20dam device=%2D profile=staff node=0 protocol=wireguard ' +
      'ipv4=10.60.0.2 ipv6=- client=- connection=kK3P/ab+cd= public=- ports=-',
  );
  assert.match(text, /^[\x20-\x7e]+$/);
  assert.equal(decodeURIComponent(SESSION_TEXT_PATTERN.exec(text)?.[2] ?? ''), 'jürgen van % dam');
});

test('however long the values, the text stays within 2,048 bytes and still matches the pattern', () => {
  const long = '\u{1F600}'.repeat(255);
  const text = sessionText({
    ...alice,
    userId: long,
    deviceId: long,
    profileId: long,
    connectionId: long,
    ipFour: long,
    ipSix: long,
    clientAddress: long,
    vpnProto: long,
    nodeNumber: 2 ** 31,
    nat: { publicAddress: long, firstPort: 65535, lastPort: 65535 },
  });
  assert.ok(Buffer.byteLength(text) <= MAX_SESSION_TEXT_BYTES, `${Buffer.byteLength(text)} bytes`);
  assert.match(text, SESSION_TEXT_PATTERN);
  assert.ok(sessionMessage({ ...alice, userId: long }, origin, at).includes(`user_id="${long}"`), 'the whole value');
});

test('a value cut to fit the text is cut between characters, never inside one, so it still decodes', () => {
  // 43 × ü is 258 encoded bytes (%C3%BC each): 42 whole characters fit in 255, half of the 43rd would too.
  const text = sessionText({ ...alice, userId: 'ü'.repeat(43), deviceId: `${'x'.repeat(249)}\u{1F600}` });
  const fields = SESSION_TEXT_PATTERN.exec(text);
  assert.deepEqual(
    [fields?.[2], fields?.[3]],
    ['%C3%BC'.repeat(42), 'x'.repeat(249)],
    'no half of a character at the end',
  );
  assert.equal(decodeURIComponent(fields?.[2] ?? ''), 'ü'.repeat(42));
});

test('header fields that are not printable ASCII of their length are refused, absent ones are the NILVALUE', () => {
  const header = {
    facility: 'user',
    severity: 'notice',
    timestamp: at,
    hostname: null,
    appName: null,
    procId: null,
    msgId: null,
  } as const;
  assert.equal(formatSyslogMessage(header, [], ''), '<13>1 2026-11-29T04:18:20.123Z - - - - -');
  assert.throws(() => formatSyslogMessage({ ...header, hostname: 'two words' }, [], ''), /HOSTNAME/);
  assert.throws(() => formatSyslogMessage({ ...header, appName: 'a'.repeat(49) }, [], ''), /APP-NAME/);
  assert.throws(() => formatSyslogMessage(header, [{ id: 'bad id', params: [] }], ''), /SD-ID/);
  assert.throws(() => formatSyslogMessage(header, [], 'caf\u00e9'), /ASCII/);
});

test('octet counting prefixes the length in bytes, not characters', () => {
  assert.equal(octetCounted('<13>1 - - - - - - ü').toString('utf8'), '20 <13>1 - - - - - - ü');
});

test('newline framing ends the message with a line feed and turns line breaks inside it into spaces', () => {
  assert.equal(
    newlineFramed('<13>1 - - - - - [a@1 b="x\r\ny"] z').toString('utf8'),
    '<13>1 - - - - - [a@1 b="x  y"] z\n',
  );
});

test('without structured data the message is the header, the NILVALUE and the text', () => {
  assert.equal(
    sessionMessage(alice, { ...origin, structuredData: false }, at),
    `<86>1 2026-11-29T04:18:20.123Z portal.example.org vpn-portal 4242 SESSION_START - ${sessionText(alice)}`,
  );
});

test('no parameter of the structured data looks like a text field to a per-field expression', () => {
  const message = sessionMessage({ ...alice, deviceId: 'dev-1', event: 'stop', bytes: { in: 1, out: 2 } }, origin, at);
  const data = message.slice(message.indexOf('['), message.indexOf('] ') + 1);
  for (const field of ['user', 'device', 'profile', 'node', 'protocol', 'ipv4', 'ipv6', 'client', 'connection'])
    assert.ok(!data.includes(`${field}=`), `${field}= in ${data}`);
});
