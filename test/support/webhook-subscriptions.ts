// A webhook subscription written straight into storage, for tests of what the outbox writes
// (no receiver behind it: the tests read the outbox rows, nothing is delivered).
import type { Db } from '../../src/storage/database.js';
import { insertWebhook } from '../../src/storage/webhooks.js';

/** Subscribes `webhookId` to `eventTypes` (`['*']`: every type), as of `createdAt`. */
export async function subscribe(
  db: Db,
  webhookId: string,
  eventTypes: readonly string[],
  createdAt = '2026-11-29T12:00:00+00:00',
): Promise<void> {
  await insertWebhook(db, {
    webhookId,
    url: 'https://hooks.example.org/',
    eventTypes,
    description: null,
    secret: 'sealed',
    previousSecret: null,
    previousSecretUntil: null,
    createdAt,
  });
}
