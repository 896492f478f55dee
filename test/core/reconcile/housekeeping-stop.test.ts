// A portal that stops must not wait for, or race, a housekeeping under way: stop() ends it at its
// next step, as it ends a full pass before its next node, and nothing of it is written after.
// The stop comes while one of the housekeeping's statements is under way (a plugin on the
// scheduler's database calls it there: its first, one of the retention's), on a day whose daily
// run is due, with history old enough for that run to delete.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from 'kysely';
import { pino } from 'pino';
import { ReconcileScheduler } from '../../../src/core/reconcile/index.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { readState } from '../../../src/storage/portal-state.js';
import { auditLog } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';
import { within } from '../../support/until.js';

/** Calls `stop` at the first statement `matches` picks, then notes every write statement sent after it. */
class StopAtStatement implements KyselyPlugin {
  readonly writesAfterStop: string[] = [];
  #stopped = false;

  constructor(
    private readonly matches: (text: string) => boolean,
    private readonly stop: () => void,
  ) {}

  transformQuery(args: PluginTransformQueryArgs) {
    const text = JSON.stringify(args.node);
    if (this.#stopped) {
      if (args.node.kind !== 'SelectQueryNode') this.writesAfterStop.push(`${args.node.kind}: ${tables(text)}`);
    } else if (this.matches(text)) {
      this.#stopped = true;
      this.stop();
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs) {
    return args.result;
  }
}

/** The tables a statement names. */
function tables(text: string): string {
  return [...text.matchAll(/"kind":"TableNode","table":\{[^}]*?"identifier":\{"kind":"IdentifierNode","name":"(\w+)"/g)]
    .map((match) => match[1])
    .join(', ');
}

/**
 * A portal whose first day's housekeeping is done, holding a session closed long ago, whose clock
 * is then moved to the next day: the daily run is due, and would delete that session
 * (connectionLogRetention P1M). A scheduler of its own stops at the first statement `stopAt` picks.
 */
async function owingHousekeeping(t: TestContext, stopAt: (text: string) => boolean) {
  let now = new Date('2026-05-04T10:00:00Z');
  const messages: string[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void messages.push(String((JSON.parse(line) as Record<string, unknown>)['msg'])) },
  );
  const portal = await startTestPortal({ clock: { now: () => now }, config: { reconcileInterval: 'PT1H' } });
  t.after(portal.close);
  const ctx = portal.portal.ctx;
  await portal.reconcile(); // the first day's housekeeping is done
  await openConnection(ctx.db, {
    userId: asUserId('bob'),
    profileId: asProfileId('default'),
    vpnProto: 'wireguard',
    connectionId: 'old',
    nodeNumber: asNodeNumber(0),
    ipFour: '10.43.43.2',
    ipSix: 'fd43::2',
    originatingIp: null,
    connectedAt: new Date('2026-02-01T08:00:00Z'),
  });
  await closeConnection(ctx.db, {
    connectionId: 'old',
    nodeNumber: asNodeNumber(0),
    disconnectedAt: new Date('2026-02-01T09:00:00Z'),
    bytesIn: 1,
    bytesOut: 2,
  });
  const history = async () => (await portal.admin.connectionLog()).connection_log.map((entry) => entry.connection_id);
  assert.deepEqual(await history(), ['old']);
  now = new Date('2026-05-05T00:10:00Z');

  let scheduler: ReconcileScheduler | null = null;
  const plugin = new StopAtStatement(stopAt, () => scheduler?.stop());
  const stopping = new ReconcileScheduler({ ...ctx, logger, db: ctx.db.withPlugin(plugin) });
  scheduler = stopping;
  t.after(() => {
    stopping.stop();
    return stopping.idle();
  });
  const lastRunDay = () => readState(ctx.db, 'housekeeping.day');
  return { portal, ctx, scheduler: stopping, plugin, messages, history, lastRunDay };
}

test('a portal that stops ends its housekeeping at the next step, and nothing of it is written after', async (t) => {
  // The housekeeping's first statement: the kept answers whose 24 hours are over.
  const { ctx, scheduler, plugin, messages, history, lastRunDay } = await owingHousekeeping(
    t,
    (text) => text.includes('"DeleteQueryNode"') && text.includes('"idempotency_records"'),
  );
  await within(scheduler.runAll(), 'the pass and the housekeeping it set off ended', 10_000);
  await within(scheduler.idle(), 'idle() after the stop', 1_000);

  assert.ok(messages.includes('housekeeping ended early: the portal stops'), `logged: ${JSON.stringify(messages)}`);
  assert.deepEqual(plugin.writesAfterStop, [], 'no statement written after the stop');
  assert.equal(await lastRunDay(), '2026-05-04', 'the day’s run is not recorded as done');
  assert.deepEqual(await history(), ['old'], 'nor did it delete the history');

  // The next portal runs it in full.
  await new ReconcileScheduler(ctx).runAll();
  assert.equal(await lastRunDay(), '2026-05-05');
  assert.deepEqual(await history(), [], 'the history it owed is gone');
});

test('a portal that stops during the retention ends it before the next kind, and audits what went', async (t) => {
  // The retention's first kind: closed history past connectionLogRetention.
  const { portal, scheduler, plugin, messages, history, lastRunDay } = await owingHousekeeping(
    t,
    (text) => text.includes('"DeleteQueryNode"') && text.includes('"connection_log"'),
  );
  const [newestBefore] = await auditLog(portal, 1);
  await within(scheduler.runAll(), 'the pass and the housekeeping it set off ended', 10_000);

  assert.ok(messages.includes('housekeeping ended early: the portal stops'), `logged: ${JSON.stringify(messages)}`);
  assert.deepEqual(await history(), [], 'the kind under way when the portal stopped went');
  const rows = (await auditLog(portal)).filter((row) => row.auditId > (newestBefore?.auditId ?? ''));
  assert.deepEqual(
    rows.map((row) => [row.call, row.parameters['connection_log'], row.parameters['originating_ip']]),
    [['housekeeping', '1', undefined]],
    'one audit row says what went, and names no kind after the stop',
  );
  // The audit row goes through the events seam, not the statements the plugin sees.
  assert.deepEqual(plugin.writesAfterStop, [], 'no other kind was pruned after the stop');
  assert.equal(await lastRunDay(), '2026-05-04', 'the day’s run is not recorded as done');
});
