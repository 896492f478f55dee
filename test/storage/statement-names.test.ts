// Which statements get a name to be prepared under: a text seen a second time, always the same
// name for the same text, no more names than a connection should hold, and a new generation of
// names when a new text comes back after they were all given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  GENERATION_AT_LEAST_MS,
  isStalePreparedStatement,
  LONGEST_NAMED_LIST,
  MOST_NAMES,
  StatementNames,
} from '../../src/storage/statement-names.js';

test('a statement is sent unnamed the first time, then always under the one name it got', () => {
  const names = new StatementNames();
  const create = 'WITH taken AS (SELECT $1) SELECT 1';
  const read = 'SELECT user_id FROM users WHERE user_id = $1';
  assert.equal(names.nameFor(create), undefined);
  assert.equal(names.nameFor(read), undefined);
  const createName = names.nameFor(create);
  assert.equal(createName, 'vpn_portal_1');
  assert.equal(names.nameFor(read), 'vpn_portal_2');
  assert.equal(names.nameFor(create), createName);
});

/** A query for the peers among `count` keys, as the query builder writes it. */
function peersAmong(count: number): string {
  const list = Array.from({ length: count }, (_, index) => `$${index + 2}`).join(', ');
  return `select * from "wg_peers" where "node_number" = $1 and "public_key" in (${list})`;
}

test('a statement with a long list of values is never named; one with a short list is', () => {
  const names = new StatementNames();
  const long = peersAmong(LONGEST_NAMED_LIST + 1);
  for (let run = 0; run < 5; run++) assert.equal(names.nameFor(long), undefined);
  const short = peersAmong(LONGEST_NAMED_LIST);
  assert.equal(names.nameFor(short), undefined);
  assert.equal(names.nameFor(short), 'vpn_portal_1');
  assert.equal(names.nameFor(peersAmong(1)), undefined);
  assert.equal(names.nameFor(peersAmong(1)), 'vpn_portal_2');
});

/** Names whose clock is `clock.now`, every name given: `SELECT $1 + 0` … `SELECT $1 + ${MOST_NAMES - 1}`, each run twice. */
function allNamesGiven(clock: { now: number }): StatementNames {
  const names = new StatementNames(() => clock.now);
  for (let index = 0; index < MOST_NAMES; index++) {
    names.nameFor(`SELECT $1 + ${index}`);
    names.nameFor(`SELECT $1 + ${index}`);
  }
  return names;
}

test('no more than MOST_NAMES texts get a name; the others go on unnamed for a while', () => {
  const clock = { now: 0 };
  const names = allNamesGiven(clock);
  clock.now += GENERATION_AT_LEAST_MS - 1;
  assert.equal(names.nameFor('SELECT $1 + 0'), 'vpn_portal_1');
  assert.equal(names.nameFor(`SELECT $1 + ${MOST_NAMES - 1}`), `vpn_portal_${MOST_NAMES}`);
  for (let run = 0; run < 3; run++) assert.equal(names.nameFor('SELECT $1 + 1000'), undefined);
  assert.equal(names.generation, 1);
});

test('a new text coming back after the names were all given starts a generation of new names', () => {
  const clock = { now: 0 };
  const names = allNamesGiven(clock);
  assert.equal(names.nameFor('SELECT $1 + 1000'), undefined);
  clock.now += GENERATION_AT_LEAST_MS;
  assert.equal(names.nameFor('SELECT $1 + 1000'), `vpn_portal_${MOST_NAMES + 1}`);
  assert.equal(names.generation, 2);
  // The texts of the first generation are named again when they come back, never under an old name.
  assert.equal(names.nameFor('SELECT $1 + 0'), undefined);
  assert.equal(names.nameFor('SELECT $1 + 0'), `vpn_portal_${MOST_NAMES + 2}`);
  assert.equal(names.nameFor('SELECT $1 + 1000'), `vpn_portal_${MOST_NAMES + 1}`);
});

test('a third generation waits as long after the second as the second after the start', () => {
  const clock = { now: 0 };
  const names = allNamesGiven(clock);
  clock.now += GENERATION_AT_LEAST_MS;
  for (let index = 0; index < MOST_NAMES; index++) {
    names.nameFor(`SELECT $1 - ${index}`);
    names.nameFor(`SELECT $1 - ${index}`);
  }
  assert.equal(names.generation, 2);
  clock.now += GENERATION_AT_LEAST_MS - 1;
  names.nameFor('SELECT $1 * 2');
  assert.equal(names.nameFor('SELECT $1 * 2'), undefined);
  clock.now += 1;
  assert.equal(names.nameFor('SELECT $1 * 2'), `vpn_portal_${2 * MOST_NAMES + 1}`);
  assert.equal(names.generation, 3);
});

test('only a stale or vanished prepared statement counts as stale, not any unsupported feature', () => {
  assert.equal(isStalePreparedStatement({ code: '0A000', message: 'cached plan must not change result type' }), true);
  assert.equal(
    isStalePreparedStatement({ code: '26000', message: 'prepared statement "vpn_portal_3" does not exist' }),
    true,
  );
  assert.equal(
    isStalePreparedStatement({ code: '0A000', message: 'FOR UPDATE is not allowed with aggregate functions' }),
    false,
  );
  assert.equal(
    isStalePreparedStatement({ code: '23505', message: 'duplicate key value violates unique constraint' }),
    false,
  );
});
