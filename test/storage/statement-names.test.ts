// Which statements get a name to be prepared under: a text seen a second time, always the same
// name for the same text, and no more names than a connection should hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
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

test('no more than MOST_NAMES texts get a name; the others go on unnamed', () => {
  const names = new StatementNames();
  for (let index = 0; index < MOST_NAMES + 50; index++) {
    const text = `SELECT $1 + ${index}`;
    names.nameFor(text);
    names.nameFor(text);
  }
  assert.equal(names.nameFor('SELECT $1 + 0'), 'vpn_portal_1');
  assert.equal(names.nameFor(`SELECT $1 + ${MOST_NAMES - 1}`), `vpn_portal_${MOST_NAMES}`);
  assert.equal(names.nameFor(`SELECT $1 + ${MOST_NAMES}`), undefined);
  assert.equal(names.nameFor('SELECT $1 + 1000'), undefined);
  assert.equal(names.nameFor('SELECT $1 + 1000'), undefined);
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
