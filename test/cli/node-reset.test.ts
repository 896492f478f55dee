// No silent empty database: a portal pointed at a database that never held a configuration
// for a node (a fresh file, a typo in `database`) must not reconcile that node's peers away.
// It says so loudly and leaves the node alone until an administrator confirms with
// `vpn-portal node-reset N`.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { runCli } from '../support/portal-process.js';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { createTestDatabase, dropTestDatabase } from '../support/postgres.js';
import { defaultTestConfig, startTestPortal } from '../support/test-portal.js';

const employees = (nodeUrl: string): PortalConfigFile['ProfileList'][number] => ({
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
  defaultGateway: false,
  nodeUrl,
});

test('a portal on a database that never held a configuration leaves a full node alone until node-reset confirms it', async (t) => {
  let nodeUrl = '';
  const lab = await startPortalWithNode({
    config: (url) => {
      nodeUrl = url;
      return { ProfileList: [employees(url)] };
    },
  });
  t.after(lab.close);
  for (const user of ['alice', 'bob', 'carol'])
    assert.equal((await lab.portal.post('/create', { user_id: user, profile_id: 'employees' })).status, 200);
  assert.equal((await lab.peersOnNode()).size, 3, 'the node holds three peers');
  // The administrator moves the portal and points it at the wrong database: empty, same keys and node.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-node-reset-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  cpSync(path.join(lab.portal.dataDir, 'keys'), path.join(dataDir, 'keys'), { recursive: true });
  await lab.portal.close();
  const server = process.env['TEST_DATABASE_URL'];
  let database = `sqlite:${path.join(dataDir, 'other.sqlite')}`;
  if (server !== undefined && server !== '') {
    const created = await createTestDatabase(server);
    t.after(() => dropTestDatabase(server, created.name));
    database = created.url;
  }
  const logged: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const config: Partial<PortalConfigFile> = { ProfileList: [employees(nodeUrl)] };
  const wrong = await startTestPortal({ dataDir, database, config, logger });
  t.after(wrong.close);
  await wrong.reconcile();
  assert.equal((await lab.peersOnNode()).size, 3, 'no peer was removed');
  const refusal = logged.find(
    (line) => typeof line['msg'] === 'string' && line['msg'].includes('never held a WireGuard configuration'),
  );
  assert.ok(refusal !== undefined, 'the portal said why it left the node alone');
  assert.equal(refusal['level'], 50, 'at error level');
  assert.match(String(refusal['msg']), /run "vpn-portal node-reset 0"/);

  // The administrator means it.
  const configFile = path.join(dataDir, 'wrong.json');
  writeFileSync(configFile, JSON.stringify({ ...defaultTestConfig, ...config, dataDir, database }));
  const reset = await runCli(['node-reset', '0', '--config', configFile]);
  assert.equal(reset.code, 0, reset.stderr);
  assert.match(reset.stdout, /^node 0 may be emptied/m);
  await wrong.reconcile();
  assert.equal((await lab.peersOnNode()).size, 0, 'after node-reset the node follows the database');
  // The node had followed the first database's revisions; this one moved its counter past them.
  assert.ok(
    logged.some((line) => String(line['msg']).includes('newer than this database')),
    'the portal noticed the node followed another database',
  );
});

test('node-reset for a node no profile runs on is an error', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const configFile = path.join(portal.dataDir, 'portal.json');
  writeFileSync(
    configFile,
    JSON.stringify({ ...defaultTestConfig, dataDir: portal.dataDir, database: portal.database }),
  );
  const reset = await runCli(['node-reset', '7', '--config', configFile]);
  assert.equal(reset.code, 2);
  assert.equal(reset.stderr.trim(), 'node-reset: no profile of the configuration runs on node 7');
});

test('node-reset with something else than a node number says so, naming the command, not an option', async () => {
  const reset = await runCli(['node-reset', 'x']);
  assert.equal(reset.code, 2);
  assert.equal(reset.stderr.trim(), 'node-reset needs a node number (0, 1, ...), not "x"');
});
