// The story behind "a revocation is final", told against real parts: thousands of
// configurations are made while the node is down, the node comes back and the portal's
// recovery pass starts putting them on it, and every user is disabled while that pass runs.
// A sampler reads the node's peers (`wg show`) over and over; a peer whose user's
// disable_user had already answered when a sample started must never be in it.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { forEachLimited } from '../../src/shared/limited-parallel.js';
import { LAB_PROFILE, startTunnelLab } from './tunnel-lab.js';
import type { TestPortal } from './test-portal.js';

export interface RaceOptions {
  readonly users: number;
  readonly configurationsPerUser: number;
  /** Portal instances on one database; disables go round-robin over all of them. */
  readonly portals: 1 | 2;
}

export interface RaceOutcome {
  readonly samples: number;
  /** "user: key seen at +t ms, disable answered at +t ms" for every breach of the promise. */
  readonly violations: readonly string[];
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

    const disabledAt = new Map<string, number>();
    let disablesDone = false;
    const violations: string[] = [];
    let samples = 0;
    const sampler = (async () => {
      let quietUntil = Number.POSITIVE_INFINITY;
      while (performance.now() < quietUntil) {
        const startedAt = performance.now();
        const peers = await lab.peersOnNode();
        samples++;
        for (const key of peers.keys()) {
          const user = ownerOf.get(key);
          const answered = user === undefined ? undefined : disabledAt.get(user);
          if (answered !== undefined && answered < startedAt) {
            violations.push(
              `${user}: ${key} on the node at +${Math.round(startedAt - origin)} ms, disable_user answered at +${Math.round(answered - origin)} ms`,
            );
          }
        }
        // Keep looking for 3 s after the last disable: a late add would show up then.
        if (disablesDone && quietUntil === Number.POSITIVE_INFINITY) quietUntil = performance.now() + 3_000;
      }
    })();

    let turn = 0;
    // The race is on once the first disable is sent (its answer may come after the last add).
    const disablesBeganEpochMs = Date.now();
    await forEachLimited(users, 8, async (user) => {
      const portal = portals[turn++ % portals.length] ?? lab.portal;
      const disabled = await portal.post('/disable_user', { user_id: user });
      assert.equal(disabled.status, 204, disabled.text);
      disabledAt.set(user, performance.now());
    });
    disablesDone = true;
    await sampler;

    const peersSetAfterDisablesBegan = agent.lines
      .filter((line) => line.msg === 'applied peer batch' && Number(line['time']) > disablesBeganEpochMs)
      .reduce((sum, line) => sum + Number(line['peersSet'] ?? 0), 0);
    return { samples, violations, peersSetAfterDisablesBegan, peersLeftAtEnd: (await lab.peersOnNode()).size };
  } finally {
    await lab.close();
  }
}
