// The story behind "a revocation is final", told against real parts: thousands of
// configurations are made while the node is down, the node comes back and the portal's
// recovery pass starts putting them on it, and every user is disabled while that pass runs.
// A sampler reads the node's peers (`wg show`) over and over; a peer whose removal the node
// had confirmed when a sample started must never be in it. The node confirms during the call
// when it answers in time, and disable_user's receipt then says `applied`. A node that an
// instance still holds for down and that does not answer its glance within 200 ms (a busy
// machine) leaves the receipt `pending` (docs/hung-nodes.md); the recovery pass confirms it
// within seconds, and from then on the same holds.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { forEachLimited } from '../../src/shared/limited-parallel.js';
import { LAB_PROFILE, startTunnelLab } from './tunnel-lab.js';
import type { TestPortal } from './test-portal.js';

/** How soon after the last disable every receipt must say applied ("within seconds"). */
const RECEIPT_LIMIT_MS = 15_000;

export interface RaceOptions {
  readonly users: number;
  readonly configurationsPerUser: number;
  /** Portal instances on one database; disables go round-robin over all of them. */
  readonly portals: 1 | 2;
}

export interface RaceOutcome {
  readonly samples: number;
  /** "user: key seen at +t ms, removal confirmed at +t ms" for every breach of the promise. */
  readonly violations: readonly string[];
  /** Disables whose receipt was still pending when the call answered (a node slow to answer a glance). */
  readonly pendingAtAnswer: number;
  /** Users whose receipt was not applied within RECEIPT_LIMIT_MS of the last disable. */
  readonly neverConfirmed: readonly string[];
  /** Peers the agent set on its interface after the first disable_user was sent. */
  readonly peersSetAfterDisablesBegan: number;
  readonly peersLeftAtEnd: number;
}

export async function raceDisablesAgainstRecovery(options: RaceOptions): Promise<RaceOutcome> {
  const lab = await startTunnelLab({
    client: false,
    startAgent: false,
    extraPortals: options.portals - 1,
    profile: { wRangeFour: '198.19.32.0/20', wRangeSix: 'fd00:32::/64' },
    // Only the passes the story sets off: the node coming back.
    portalConfig: { reconcileInterval: 'PT1H', logLevel: 'silent' },
  });
  try {
    const portals: TestPortal[] = [lab.portal, ...lab.extraPortals];
    const users = Array.from({ length: options.users }, (_, index) => `user-${String(index).padStart(4, '0')}`);

    // The node is down: every configuration stays in the database.
    const jobs = users.flatMap((user) => Array.from({ length: options.configurationsPerUser }, () => user));
    await forEachLimited(jobs, 16, async (user) => {
      const created = await lab.portal.post(
        '/create',
        { user_id: user, profile_id: LAB_PROFILE },
        { accept: 'application/x-wireguard-profile' },
      );
      assert.equal(created.status, 200, created.text);
    });
    const ownerOf = new Map<string, string>();
    for (const user of users) {
      for (const entry of await lab.portal.admin.userConfigurationList(user)) ownerOf.set(entry.connection_id, user);
    }
    assert.equal(ownerOf.size, jobs.length, 'every configuration was stored');
    assert.equal((await lab.peersOnNode().catch(() => new Map())).size, 0, 'nothing is on the node yet');

    // The node comes back; the portal's recovery pass starts adding peers.
    const agent = await lab.startAgent();
    // The portal notices by itself; a full pass asked for on top races along with it.
    void lab.portal.portal.reconcileNow();
    const origin = performance.now();
    while ((await lab.peersOnNode()).size === 0) {
      assert.ok(performance.now() - origin < 30_000, 'the recovery pass began within 30 s');
    }

    /** When the test knew the node had confirmed each user's removal (the receipt said applied). */
    const confirmedAt = new Map<string, number>();
    /** Receipts still pending when their call answered, with the instance that made them. */
    const pending = new Map<string, { readonly portal: TestPortal; readonly receipt: string }>();
    let disablesDone = false;
    const violations: string[] = [];
    let samples = 0;
    let pendingAtAnswer = 0;
    const sampler = (async () => {
      let quietUntil = Number.POSITIVE_INFINITY;
      while (performance.now() < quietUntil) {
        const startedAt = performance.now();
        const peers = await lab.peersOnNode();
        samples++;
        for (const key of peers.keys()) {
          const user = ownerOf.get(key);
          const confirmed = user === undefined ? undefined : confirmedAt.get(user);
          if (confirmed !== undefined && confirmed < startedAt) {
            violations.push(
              `${user}: ${key} on the node at +${Math.round(startedAt - origin)} ms, removal confirmed at +${Math.round(confirmed - origin)} ms`,
            );
          }
        }
        // Keep looking for 3 s after the last confirmation: a late add would show up then.
        if (disablesDone && pending.size === 0 && quietUntil === Number.POSITIVE_INFINITY) {
          quietUntil = performance.now() + 3_000;
        }
      }
    })();
    const receiptSays = async (portal: TestPortal, receipt: string): Promise<string> =>
      (await portal.admin.revocation(receipt)).state;

    let turn = 0;
    // The race is on once the first disable is sent (its answer may come after the last add).
    const disablesBeganEpochMs = Date.now();
    await forEachLimited(users, 8, async (user) => {
      const portal = portals[turn++ % portals.length] ?? lab.portal;
      const receipt = await portal.admin.disableUser(user);
      assert.ok(receipt !== null, `disable_user of ${user} answered a receipt`);
      // Applied: the node confirmed during the call (the time is taken after asking, a few ms late).
      if ((await receiptSays(portal, receipt)) === 'applied') confirmedAt.set(user, performance.now());
      else {
        pendingAtAnswer++;
        pending.set(user, { portal, receipt });
      }
    });
    const lastDisable = performance.now();
    disablesDone = true;
    while (pending.size > 0 && performance.now() - lastDisable < RECEIPT_LIMIT_MS) {
      for (const [user, { portal, receipt }] of pending) {
        if ((await receiptSays(portal, receipt)) !== 'applied') continue;
        confirmedAt.set(user, performance.now());
        pending.delete(user);
      }
      await sleep(50);
    }
    const neverConfirmed = [...pending.keys()];
    pending.clear();
    await sampler;

    const peersSetAfterDisablesBegan = agent.lines
      .filter((line) => line.msg === 'applied peer batch' && Number(line['time']) > disablesBeganEpochMs)
      .reduce((sum, line) => sum + Number(line['peersSet'] ?? 0), 0);
    return {
      samples,
      violations,
      pendingAtAnswer,
      neverConfirmed,
      peersSetAfterDisablesBegan,
      peersLeftAtEnd: (await lab.peersOnNode()).size,
    };
  } finally {
    await lab.close();
  }
}
