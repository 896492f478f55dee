// When the WireGuard service looks at its peers' endpoints by itself: every 10 s while a look is
// cheap; at thousands of peers (a look holds wireguard-go's lock, and peer changes wait for it)
// only in a pause of peer changes, or once 30 s have passed. Times are given, not waited for;
// the real interface and its looks are in peers.test.ts and handshake.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endpointLookDue } from '../../../src/agent/wireguard/service.js';

const CHEAP_READ_MS = 5;
const EXPENSIVE_READ_MS = 800;

test('with a cheap look the service looks every 10 s, however busy the interface', () => {
  const busy = { lastLookMs: 0, lastReadDurationMs: CHEAP_READ_MS };
  assert.equal(endpointLookDue({ ...busy, nowMs: 9_999, lastPeerChangeMs: 9_999 }), false, 'not before 10 s');
  assert.equal(
    endpointLookDue({ ...busy, nowMs: 10_000, lastPeerChangeMs: 10_000 }),
    true,
    'at 10 s, while changes are written',
  );
});

test('with an expensive look the service waits past 10 s for a second without peer changes', () => {
  const expensive = { lastLookMs: 0, lastReadDurationMs: EXPENSIVE_READ_MS };
  assert.equal(
    endpointLookDue({ ...expensive, nowMs: 9_000, lastPeerChangeMs: 0 }),
    false,
    'not before 10 s, even when quiet',
  );
  assert.equal(
    endpointLookDue({ ...expensive, nowMs: 12_000, lastPeerChangeMs: 11_500 }),
    false,
    'changes half a second ago',
  );
  assert.equal(
    endpointLookDue({ ...expensive, nowMs: 12_000, lastPeerChangeMs: 11_000 }),
    true,
    'a second without changes',
  );
});

test('with an expensive look and changes without a pause the service still looks 30 s after the last look', () => {
  const expensive = { lastLookMs: 5_000, lastReadDurationMs: EXPENSIVE_READ_MS };
  assert.equal(endpointLookDue({ ...expensive, nowMs: 34_999, lastPeerChangeMs: 34_999 }), false, '29.999 s after');
  assert.equal(endpointLookDue({ ...expensive, nowMs: 35_000, lastPeerChangeMs: 35_000 }), true, '30 s after');
});
