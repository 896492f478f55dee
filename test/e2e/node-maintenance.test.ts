// Draining a node for maintenance, as an operator does it: set "maintenanceMode": true in the
// node's configuration and send the agent SIGHUP. New configurations then go to the other node
// only; the drained node's peers stay and keep working. When every node of a profile is in
// maintenance, create says so (503). Leaving maintenance is the same in reverse.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { asNodeNumber } from '../../src/shared/ids.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import type { NodeAgentProcess } from '../support/node-agent-process.js';

describe('a node drained for maintenance takes no new configurations and keeps its own', () => {
  let lab: TunnelLab;
  let created = 0;

  /** Creates a configuration and says on which node (by its address range) it landed. */
  const createOne = async (): Promise<0 | 1> => {
    created++;
    const file = await lab.portal.admin.create(
      { user_id: `user-${created}`, profile_id: LAB_PROFILE },
      'application/x-wireguard-profile',
    );
    const address = /^Address = (198\.19\.4[46])\./m.exec(file.body)?.[1];
    assert.ok(address !== undefined, file.body);
    return address === '198.19.44' ? 0 : 1;
  };
  const setMaintenance = async (
    configFile: string,
    agent: NodeAgentProcess,
    nodeNumber: 0 | 1,
    on: boolean,
  ): Promise<void> => {
    const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(configFile, JSON.stringify({ ...config, maintenanceMode: on }));
    agent.child.kill('SIGHUP');
    // The portal asks every node every 2 s.
    for (
      let tries = 0;
      tries < 100 && lab.portal.portal.ctx.nodes.isInMaintenance(asNodeNumber(nodeNumber)) !== on;
      tries++
    )
      await sleep(100);
    assert.equal(
      lab.portal.portal.ctx.nodes.isInMaintenance(asNodeNumber(nodeNumber)),
      on,
      `the portal sees node ${nodeNumber} ${on ? 'in' : 'out of'} maintenance`,
    );
  };

  before(async () => {
    lab = await startTunnelLab({ client: false, secondNode: true, portalConfig: { reconcileInterval: 'PT1H' } });
    await lab.portal.reconcile();
  });

  after(async () => {
    await lab?.close();
  });

  test('with both nodes in service, configurations go to both', async () => {
    const nodes = new Set<number>();
    for (let tries = 0; tries < 20 && nodes.size < 2; tries++) nodes.add(await createOne());
    assert.deepEqual([...nodes].sort(), [0, 1]);
  });

  test('after SIGHUP with maintenanceMode, every new configuration goes to the other node; the drained node keeps its peers', async () => {
    const second = lab.secondNode;
    const keptOnSecond = [...(await second.peersOnNode()).keys()].sort();
    assert.ok(keptOnSecond.length > 0);
    await setMaintenance(second.agentConfigFile, second.agent, 1, true);
    assert.ok(
      second.agent.withMessage('maintenance mode on: the portal puts no new configuration here').length === 1,
      'the agent said so',
    );

    const before = (await lab.peersOnNode()).size;
    for (let index = 0; index < 10; index++) assert.equal(await createOne(), 0, 'a drained node gets nothing new');
    assert.equal((await lab.peersOnNode()).size, before + 10);
    await lab.portal.reconcile();
    assert.deepEqual([...(await second.peersOnNode()).keys()].sort(), keptOnSecond, "the drained node's peers stay");
  });

  test('when every node is in maintenance, create answers 503 and says why', async () => {
    await setMaintenance(lab.agentConfigFile, lab.agent, 0, true);
    const refused = await lab.portal.post('/create', { user_id: 'late', profile_id: LAB_PROFILE });
    assert.equal(refused.status, 503);
    assert.deepEqual(refused.json(), {
      error: `every node of profile "${LAB_PROFILE}" is in maintenance; try again later`,
    });
    await setMaintenance(lab.agentConfigFile, lab.agent, 0, false);
  });

  test('leaving maintenance lets new configurations reach the node again', async () => {
    await setMaintenance(lab.secondNode.agentConfigFile, lab.secondNode.agent, 1, false);
    let landed = false;
    for (let tries = 0; tries < 20 && !landed; tries++) landed = (await createOne()) === 1;
    assert.ok(landed, 'a new configuration went to node 1');
  });
});
