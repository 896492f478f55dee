// The node agent dates each peer's run of handshakes from the first one it saw: a later
// handshake less than 3 minutes after the one before continues the run, a longer silence or a
// removal starts a new one, and a peer without a handshake has none. A run it could not have
// seen begin (under way at its first look, or begun while it did not look for over 90 s) has no
// known start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OnlineRuns } from '../../../src/agent/wireguard/online-runs.js';
import { asWireGuardKey } from '../../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';

const alice = asWireGuardKey(generateWireGuardKeyPair().publicKey);
const bob = asWireGuardKey(generateWireGuardKeyPair().publicKey);
const at = (minutes: number) => new Date(Date.UTC(2026, 11, 2, 9, 0) + minutes * 60_000);
/** The agent's looks, by its monotonic clock, in minutes. */
const look = (minutes: number) => minutes * 60_000;
/** The wall clock at that look, when nobody sets it. */
const wall = (minutes: number) => at(minutes).getTime();

test('handshakes every 2 minutes are one run from the first; 3 minutes of silence start another', () => {
  const runs = new OnlineRuns();
  runs.observe([], look(-0.5), wall(-0.5));
  runs.observe(
    [
      { publicKey: alice, latestHandshake: at(0) },
      { publicKey: bob, latestHandshake: null },
    ],
    look(0),
    wall(0),
  );
  assert.deepEqual(runs.since(alice), at(0));
  assert.equal(runs.since(bob), null, 'no handshake, no run');

  for (const minutes of [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6])
    runs.observe(
      [{ publicKey: alice, latestHandshake: at(Math.floor(minutes / 2) * 2) }],
      look(minutes),
      wall(minutes),
    );
  assert.deepEqual(runs.since(alice), at(0), 'each handshake less than 3 minutes after the one before');

  for (const minutes of [6.5, 7, 7.5, 8, 8.5, 9])
    runs.observe([{ publicKey: alice, latestHandshake: at(minutes >= 9 ? 9 : 6) }], look(minutes), wall(minutes));
  assert.deepEqual(runs.since(alice), at(9), 'after 3 minutes of silence a new run begins');
});

test('a run under way at the first look, or begun while the agent did not look, has no known start', () => {
  const runs = new OnlineRuns();
  runs.observe([{ publicKey: alice, latestHandshake: at(0) }], look(0), wall(0));
  assert.equal(runs.since(alice), null, 'under way when the agent started');
  runs.observe([{ publicKey: alice, latestHandshake: at(2) }], look(2.2), wall(2.2));
  assert.equal(runs.since(alice), null, 'still that run');

  // The agent did not look for 5 minutes: the handshakes it missed may have joined the two.
  runs.observe([{ publicKey: alice, latestHandshake: at(7) }], look(7.2), wall(7.2));
  assert.equal(runs.since(alice), null);
  runs.observe([{ publicKey: alice, latestHandshake: at(7) }], look(7.5), wall(7.5));
  runs.observe([{ publicKey: alice, latestHandshake: at(11) }], look(11.2), wall(11.2));
  assert.equal(runs.since(alice), null, 'one look in 3.7 minutes: not seen either');
});

test('a peer missing from a listing, or removed, starts anew', () => {
  const runs = new OnlineRuns();
  runs.observe([], look(0), wall(0));
  runs.observe([{ publicKey: alice, latestHandshake: at(0) }], look(0.5), wall(0.5));
  runs.observe([], look(1), wall(1));
  runs.observe([{ publicKey: alice, latestHandshake: at(1) }], look(1.5), wall(1.5));
  assert.deepEqual(runs.since(alice), at(1));

  runs.forget(alice);
  assert.equal(runs.since(alice), null);
  runs.observe([{ publicKey: alice, latestHandshake: at(2) }], look(2), wall(2));
  assert.deepEqual(runs.since(alice), at(2));
});

test('around a setting of the wall clock no run has a known start, until every device shook hands again', () => {
  const runs = new OnlineRuns();
  runs.observe([], look(0), wall(0));
  runs.observe([{ publicKey: alice, latestHandshake: at(0.2) }], look(0.5), wall(0.5));
  assert.deepEqual(runs.since(alice), at(0.2));

  // The clock is set 4 minutes ahead: alice's next handshake looks like one after a silence.
  const ahead = 4 * 60_000;
  runs.observe([{ publicKey: alice, latestHandshake: at(0.2) }], look(1), wall(1) + ahead);
  assert.equal(runs.since(alice), null, 'a start of the old clock');
  runs.observe(
    [{ publicKey: alice, latestHandshake: new Date(at(2.2).getTime() + ahead) }],
    look(2.5),
    wall(2.5) + ahead,
  );
  assert.equal(runs.since(alice), null, 'not a new run of its own');
  // Well after the step, a real silence and a new run are known again.
  for (const minutes of [3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5])
    runs.observe(
      [{ publicKey: alice, latestHandshake: new Date(at(2.2).getTime() + ahead) }],
      look(minutes),
      wall(minutes) + ahead,
    );
  runs.observe([{ publicKey: alice, latestHandshake: new Date(at(6.8).getTime() + ahead) }], look(7), wall(7) + ahead);
  assert.deepEqual(runs.since(alice), new Date(at(6.8).getTime() + ahead));
});
