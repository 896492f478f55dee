// `serve` and `node` stop cleanly on SIGTERM, as systemd stops them: within a second, with
// exit code 0, and say so in their log (start and stop are announced at info).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateSecrets } from '../../src/cli/generate-secrets.js';
import { loadPortalConfig } from '../../src/config/load.js';
import { PortalProcess } from '../support/portal-process.js';
import { defaultTestConfig } from '../support/test-portal.js';
import { startTunnelLab } from '../support/tunnel-lab.js';

const STOP_WITHIN_MS = 1_000;

test('serve stops within a second of SIGTERM, exit code 0, and logs why and that it stopped', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-stop-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const configFile = path.join(directory, 'portal.json');
  writeFileSync(
    configFile,
    JSON.stringify({ ...defaultTestConfig, logLevel: 'info', dataDir: 'data', database: 'sqlite:data/db.sqlite' }),
  );
  await generateSecrets(loadPortalConfig(configFile), { adminApi: true, node: undefined }, () => {});
  const portal = new PortalProcess(configFile);
  t.after(() => portal.stop());
  const url = await portal.ready();
  // A client holding an idle keep-alive connection must not delay the stop.
  await fetch(`${url}/vpn-user-portal/admin/api/v1/users`, { headers: { connection: 'keep-alive' } });
  const started = performance.now();
  const code = await portal.stop();
  const elapsed = performance.now() - started;
  assert.equal(code, 0);
  assert.ok(elapsed < STOP_WITHIN_MS, `stopped after ${Math.round(elapsed)} ms`);
  const stopping = portal.withMessage('stopping the portal');
  assert.equal(stopping[0]?.['signal'], 'SIGTERM');
  assert.equal(stopping[0]?.level, 30);
  assert.equal(portal.withMessage('portal stopped').length, 1);
});

test('node stops within a second of SIGTERM, exit code 0, removing its interface, and logs it', async (t) => {
  const lab = await startTunnelLab({ client: false });
  t.after(lab.close);
  await lab.portal.reconcile();
  const agent = lab.agent;
  const started = performance.now();
  const code = await agent.stop();
  const elapsed = performance.now() - started;
  assert.equal(code, 0);
  assert.ok(elapsed < STOP_WITHIN_MS, `stopped after ${Math.round(elapsed)} ms`);
  assert.equal(agent.withMessage('shutting down')[0]?.['signal'], 'SIGTERM');
  assert.equal(agent.withMessage('node agent stopped').length, 1);
  const links = await lab.node.exec('ip', ['-o', 'link', 'show']);
  assert.ok(!links.stdout.includes(lab.nodeInterface), 'the interface it created is gone');
});
