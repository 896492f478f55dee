// The webhook key file at a portal's start: an instance that lacks `webhooks.key` while
// subscriptions sealed with one exist refuses to start (it would otherwise make a key of its own,
// sign nothing, and seal new subscriptions that no other instance can sign), and one whose key
// does not open them all says so in its log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { describeStartFailure } from '../../../src/cli/start-failure.js';
import { AnswerCipher } from '../../../src/keys/answer-cipher.js';
import { startPortal } from '../../../src/portal.js';
import { capturedLog } from '../../support/captured-log.js';
import { startTestPortal } from '../../support/test-portal.js';

const allowLoopback = { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } };

test('a portal started without webhooks.key while subscriptions exist refuses to start, names the file and makes no key; with the file back it starts', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'webhook-key-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startTestPortal({ dataDir, config: allowLoopback });
  const config = first.portal.ctx.config;
  const keyFile = first.portal.ctx.keys.webhookKeyPath;
  await first.admin.createWebhook({ url: 'http://127.0.0.1:9/hook', event_types: 'user.created' });
  await first.admin.createWebhook({ url: 'http://127.0.0.1:9/other', event_types: '*' });
  await first.close();

  // The second instance's data folder was copied without the webhook key.
  const key = readFileSync(keyFile, 'utf8');
  rmSync(keyFile);
  const refused = await startPortal(config).then(
    async (portal) => {
      await portal.close();
      return null;
    },
    (error: unknown) => error,
  );
  assert.ok(refused instanceof Error, 'the portal started');
  assert.equal(
    describeStartFailure(refused),
    `2 webhook subscriptions have their secrets sealed with ${keyFile}, which this portal does not have (or cannot read as 64 hex characters): copy the file from the instance that made them (every instance on one database needs the same one); if it is lost, "vpn-portal generate-secrets --admin-api" makes a new one and the subscriptions must then be deleted and made again`,
  );
  assert.equal(existsSync(keyFile), false, 'no key of its own was made');

  writeFileSync(keyFile, key, { mode: 0o600 });
  const again = await startTestPortal({ dataDir, config: allowLoopback });
  t.after(again.close);
  assert.equal((await again.admin.webhooks()).length, 2);
});

test('a portal whose webhooks.key does not open every subscription starts and logs the file and the subscriptions it does not open', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'webhook-key-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startTestPortal({ dataDir, config: allowLoopback });
  const config = first.portal.ctx.config;
  const keyFile = first.portal.ctx.keys.webhookKeyPath;
  await first.admin.createWebhook({ url: 'http://127.0.0.1:9/hook', event_types: '*' });
  const { webhook: split } = await first.admin.createWebhook({ url: 'http://127.0.0.1:9/other', event_types: '*' });
  // The newer one was made through an instance that had a key of its own.
  const foreign = new AnswerCipher(randomBytes(32)).seal('its secret', `webhook:${split.webhook_id}`);
  await first.portal.ctx.db
    .updateTable('webhooks')
    .set({ secret: foreign })
    .where('webhook_id', '=', split.webhook_id)
    .execute();
  await first.close();

  const log = capturedLog();
  const portal = await startPortal(config, { logger: log.logger });
  t.after(() => portal.close());
  const error = log.lines().find((line) => line.level === 50 && String(line.msg).includes('does not open'));
  assert.equal(
    error?.msg,
    `${keyFile} does not open the secret of 1 of 2 webhook subscriptions: their deliveries fail until the file is the one they were made with, or they are deleted and made again`,
  );
  assert.deepEqual(error?.['webhooks'], [split.webhook_id]);
});
