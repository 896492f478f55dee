// A change that ends what a kept answer handed out can run its closing write while the request
// that made it has not kept its answer yet (all calls but create keep it after their change
// commits), and commit only after that request read what it handed out again. The request then
// waits for that change before it reads, so the sealed secret is gone once both have committed.
// PostgreSQL only: the plugin holds the change's connection between its closing write and its
// COMMIT, and SQLite runs one change at a time (there the race cannot happen).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  UnknownRow,
} from 'kysely';
import { deleteWebhookSubscription } from '../../../src/core/webhooks/index.js';
import { IdempotentCalls } from '../../../src/http/admin-api/idempotency.js';
import { createWebhookRaced } from '../../support/raced-webhook.js';
import { startTestPortal } from '../../support/test-portal.js';

/** A promise with its resolve, to signal a point reached. */
function signal(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Holds a change after its closing write (the statement that drops kept answers) ran, before its COMMIT, until `release()`. */
class HoldBeforeCommit implements KyselyPlugin {
  readonly #closing = new Set<unknown>();
  readonly #reached = signal();
  readonly #released = signal();
  readonly reached = this.#reached.promise;

  transformQuery(args: PluginTransformQueryArgs) {
    if (args.node.kind === 'RawNode' && JSON.stringify(args.node).includes('UPDATE idempotency_records SET state'))
      this.#closing.add(args.queryId);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#closing.has(args.queryId)) {
      this.#reached.resolve();
      await this.#released.promise;
    }
    return args.result;
  }

  release(): void {
    this.#released.resolve();
  }
}

/** Tells when the request locks (FOR SHARE) what its answer handed out: it waits for changes under way on it. */
class SeeLock implements KyselyPlugin {
  readonly #seen = signal();
  readonly seen = this.#seen.promise;

  transformQuery(args: PluginTransformQueryArgs) {
    if (args.node.kind === 'SelectQueryNode' && (args.node.endModifiers ?? []).length > 0) this.#seen.resolve();
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

test('a webhook deleted between create_webhook’s change and the keeping of its answer, committing after the request read it, leaves no sealed secret', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const { ctx } = portal.portal;
  const hold = new HoldBeforeCommit();
  const lock = new SeeLock();
  let deletion: Promise<unknown> = Promise.resolve();
  const request = createWebhookRaced(
    new IdempotentCalls({ ...ctx, db: ctx.db.withPlugin(lock) }),
    ctx,
    async (webhookId) => {
      // The deletion's closing write finds the answer still pending; its COMMIT is held.
      deletion = deleteWebhookSubscription({ ...ctx, db: ctx.db.withPlugin(hold) }, webhookId);
      await hold.reached;
    },
  );
  // The request keeps its answer and reads the webhook again; it may finish first only if it
  // does not wait for the held deletion (then it read the webhook as still there).
  const first = await Promise.race([request.then(() => 'request'), lock.seen.then(() => 'lock')]);
  hold.release();
  await deletion;
  const outcome = await request;
  assert.equal(outcome.replayed, false);
  const rows = await ctx.db.selectFrom('idempotency_records').select(['state', 'answer']).execute();
  assert.deepEqual(rows, [{ state: 'revoked', answer: null }], 'the sealed secret is gone once both committed');
  assert.equal(first, 'lock', 'the request waited for the deletion before it read the webhook');
});
