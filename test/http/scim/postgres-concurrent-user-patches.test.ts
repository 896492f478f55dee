// Two SCIM PATCHes of one user at once each apply to what the other left: a PATCH of the title
// that read the user before a PATCH calling it inactive committed must neither write back the old
// title nor enable the user again. The race is made to happen every time: another transaction
// holds the user's row while both PATCHes queue behind it. PostgreSQL only: SQLite runs one
// writing transaction at a time, so there nothing holds a row between two statements of another's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, scimClient, type ScimAnswer } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

/** Waits until `count` statements of the database wait for a lock. */
async function waitingForLocks(watcher: pg.Client, count: number): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    const waiting = await watcher.query<{ waiting: string }>(
      `select count(*) as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (Number(waiting.rows[0]?.waiting) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${count} statements never waited for a lock`);
}

test('a PATCH of the title and a PATCH calling the user inactive, sent at once in either order, both hold: the title is the new one and the user stays disabled', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'bob',
    title: 'engineer',
    active: true,
  });
  const id = String(made.body?.['id']);
  const watcher = new pg.Client({ connectionString: portal.database });
  await watcher.connect();
  try {
    for (const [round, titleFirst] of [
      [1, true],
      [2, false],
    ] as const) {
      const enabled = await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: true }));
      assert.equal(enabled.body?.['active'], true);
      const title = `title ${round}`;
      const sendTitle = () =>
        scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'title', value: title }));
      const sendOff = () => scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: false }));

      // Another transaction holds bob's row; the two PATCHes come in one after the other and wait.
      const holder = new pg.Client({ connectionString: portal.database });
      await holder.connect();
      let answers: ScimAnswer[];
      try {
        await holder.query('begin');
        await holder.query('select scim_id from scim_users where scim_id = $1 for update', [id]);
        const first = titleFirst ? sendTitle() : sendOff();
        await waitingForLocks(watcher, 1);
        const second = titleFirst ? sendOff() : sendTitle();
        await waitingForLocks(watcher, 2);
        await holder.query('rollback');
        answers = await Promise.all([first, second]);
      } finally {
        await holder.end();
      }
      for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));

      const now = await scim.send('GET', `Users/${id}`);
      assert.equal(now.body?.['title'], title, `round ${round}: the title PATCH holds`);
      assert.equal(now.body?.['active'], false, `round ${round}: the user stays inactive`);
      assert.deepEqual(await portal.admin.disabledUsers(), ['bob']);
    }
  } finally {
    await watcher.end();
  }
});
