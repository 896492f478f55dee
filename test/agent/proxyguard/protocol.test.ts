// The pure parts of the ProxyGuard relay: UoTLV/1 framing and the verdict on an HTTP request.
import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { encodeFrame, FrameDecoder, MAX_DATAGRAM_BYTES } from '../../../src/agent/proxyguard/frames.js';
import { judgeRelayRequest, type RelayRequest } from '../../../src/agent/proxyguard/handshake.js';

describe('UoTLV/1 frames', () => {
  test('a frame is the length in network byte order, then the datagram', () => {
    assert.deepEqual([...encodeFrame(Buffer.from('abc'))], [0x00, 0x03, 0x61, 0x62, 0x63]);
    assert.deepEqual([...encodeFrame(Buffer.alloc(0x0102)).subarray(0, 2)], [0x01, 0x02]);
    assert.deepEqual([...encodeFrame(Buffer.alloc(MAX_DATAGRAM_BYTES)).subarray(0, 2)], [0xff, 0xe3]);
  });

  test('datagrams that cannot be framed are refused', () => {
    assert.throws(() => encodeFrame(Buffer.alloc(0)), RangeError);
    assert.throws(() => encodeFrame(Buffer.alloc(MAX_DATAGRAM_BYTES + 1)), RangeError);
  });

  test('the decoder gives back the datagrams however the stream is cut', () => {
    const stream = Buffer.concat([
      encodeFrame(Buffer.from('first')),
      encodeFrame(Buffer.from('second')),
      encodeFrame(Buffer.from('third')),
    ]);
    for (let cut = 1; cut < stream.length; cut++) {
      const decoder = new FrameDecoder();
      const first = decoder.push(stream.subarray(0, cut));
      const second = decoder.push(stream.subarray(cut));
      assert.equal(first.error, null);
      assert.equal(second.error, null);
      assert.deepEqual(
        [...first.datagrams, ...second.datagrams].map(String),
        ['first', 'second', 'third'],
        `cut at ${cut}`,
      );
      assert.equal(decoder.pendingBytes, 0, `nothing left over when cut at ${cut}`);
    }
  });

  test('an empty or oversized frame is an error as soon as its prefix arrives, and stays one', () => {
    const empty = new FrameDecoder();
    const result = empty.push(
      Buffer.concat([encodeFrame(Buffer.from('ok')), Buffer.from([0x00, 0x00]), encodeFrame(Buffer.from('late'))]),
    );
    assert.deepEqual(result.datagrams.map(String), ['ok'], 'frames before the bad one are good');
    assert.match(result.error ?? '', /empty frame/);
    assert.match(empty.push(encodeFrame(Buffer.from('more'))).error ?? '', /empty frame/, 'the stream stays unusable');
    assert.deepEqual(empty.push(encodeFrame(Buffer.from('more'))).datagrams, []);

    const oversized = new FrameDecoder();
    assert.match(oversized.push(Buffer.from([0xff, 0xe4])).error ?? '', /65508 bytes exceeds the 65507-byte limit/);
    assert.equal(oversized.pendingBytes, 0, 'nothing of it is buffered');
  });

  test('a largest frame arriving a byte at a time is decoded with each byte joined once, not copied again with every later byte', () => {
    const frame = encodeFrame(Buffer.alloc(MAX_DATAGRAM_BYTES, 0x5a));
    const decoder = new FrameDecoder();
    let bytesCopied = 0;
    // Joining pending chunks is where bytes get copied; count what that copies while the frame arrives.
    const originalConcat = Buffer.concat;
    const concat = mock.method(Buffer, 'concat', (list: readonly Uint8Array[], totalLength?: number): Buffer => {
      const joined = originalConcat.call(Buffer, list, totalLength);
      bytesCopied += joined.length;
      return joined;
    });
    const datagrams: Buffer[] = [];
    for (let index = 0; index < frame.length; index++) {
      const result = decoder.push(frame.subarray(index, index + 1));
      assert.equal(result.error, null);
      datagrams.push(...result.datagrams);
    }
    concat.mock.restore();
    assert.equal(datagrams.length, 1, 'one datagram, once its last byte is in');
    assert.ok(datagrams[0]?.equals(Buffer.alloc(MAX_DATAGRAM_BYTES, 0x5a)), 'the datagram is intact');
    assert.equal(decoder.pendingBytes, 0);
    assert.ok(bytesCopied <= frame.length, `${bytesCopied} bytes copied for a ${frame.length}-byte frame`);
  });

  test('a smaller limit can be set', () => {
    const decoder = new FrameDecoder(1500);
    assert.equal(decoder.push(encodeFrame(Buffer.alloc(1500))).error, null);
    assert.match(decoder.push(encodeFrame(Buffer.alloc(1501))).error ?? '', /1501 bytes/);
  });
});

describe('the verdict on a request to the relay', () => {
  const hostNames = new Set(['vpn1.example.org']);
  const upgrade: RelayRequest = {
    method: 'GET',
    url: '/proxyguard/vpn1.example.org',
    httpVersion: '1.1',
    upgrade: 'UoTLV/1',
    connection: 'Upgrade',
  };
  const statusOf = (changes: Partial<RelayRequest>): number | 'upgrade' => {
    const verdict = judgeRelayRequest({ ...upgrade, ...changes }, hostNames);
    return verdict.kind === 'upgrade' ? 'upgrade' : verdict.status;
  };

  test('GET with Connection: Upgrade and Upgrade: UoTLV/1 on a path of this node is upgraded', () => {
    assert.equal(statusOf({}), 'upgrade');
    assert.equal(statusOf({ url: '/' }), 'upgrade', 'a proxy that strips the path');
    assert.equal(statusOf({ url: '/vpn1.example.org' }), 'upgrade', 'proxyUrl without /proxyguard');
    assert.equal(statusOf({ url: '/proxyguard/vpn1.example.org/?probe=1' }), 'upgrade', 'trailing slash and a query');
    assert.equal(statusOf({ url: '/proxyguard/vpn1%2Eexample.org' }), 'upgrade', 'percent-encoded');
    assert.equal(
      statusOf({ upgrade: 'uotlv/1', connection: 'keep-alive, upgrade' }),
      'upgrade',
      'tokens are case-insensitive lists',
    );
  });

  test('everything else is refused with the status that says why', () => {
    assert.equal(statusOf({ url: '/proxyguard/vpn2.example.org' }), 404, 'another node');
    assert.equal(statusOf({ url: '/proxyguard' }), 404, 'no node');
    assert.equal(statusOf({ url: '/proxyguard/%E0%A4%A' }), 404, 'broken percent-encoding');
    assert.equal(statusOf({ method: 'POST' }), 405);
    assert.equal(statusOf({ method: 'HEAD' }), 405);
    assert.equal(statusOf({ httpVersion: '1.0' }), 400);
    assert.equal(statusOf({ upgrade: undefined, connection: undefined }), 426, 'a plain GET');
    assert.equal(statusOf({ upgrade: 'websocket' }), 426, 'another protocol');
    assert.equal(statusOf({ upgrade: 'UoTLV/2' }), 426, 'another version');
    assert.equal(statusOf({ connection: 'keep-alive' }), 400, 'Upgrade without Connection: Upgrade');
  });

  test('405 names the allowed method and 426 the protocol to upgrade to', () => {
    const post = judgeRelayRequest({ ...upgrade, method: 'POST' }, hostNames);
    assert.ok(post.kind === 'refuse', 'POST is refused');
    assert.deepEqual(post.headers, { allow: 'GET' });
    const websocket = judgeRelayRequest({ ...upgrade, upgrade: 'websocket' }, hostNames);
    assert.ok(websocket.kind === 'refuse', 'websocket is refused');
    assert.deepEqual(websocket.headers, { upgrade: 'UoTLV/1', connection: 'Upgrade' });
  });
});
