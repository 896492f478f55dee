// A node agent killed with SIGKILL (outside systemd, or under a unit that kills only the main
// process) cannot stop the `openvpn` and `wireguard-go` it started. The agent started next must
// not leave them serving: a revocation made after that restart still ends the device's tunnel
// within seconds, and no process of the killed agent is left on the node.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REVOCATION_HEADER } from '../../src/protocol/admin-api.js';
import type { Namespace } from '../support/netns.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../support/openvpn-client.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { timeLimit, until } from '../support/until.js';

const PROFILE = 'staff';
const OPENVPN = 'application/x-openvpn-profile';

/** The program a pid runs (its /proc/PID/comm), or null once it is gone. */
async function programOf(pid: number): Promise<string | null> {
  try {
    return (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();
  } catch {
    return null;
  }
}

/** The pids of the node's processes that run `program`. */
async function pidsOf(node: Namespace, program: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of node.pids()) if ((await programOf(pid)) === program) found.push(pid);
  return found.sort((a, b) => a - b);
}

/** SIGKILL to the agent alone, as `kill -9 PID` does; what it started is left as it is. */
async function killAgentOnly(lab: TunnelLab): Promise<void> {
  const agent = lab.agent;
  const pid = agent.child.pid;
  assert.ok(pid !== undefined, 'the agent runs');
  process.kill(pid, 'SIGKILL');
  await agent.exitCode();
}

/** The new agent's log lines of the processes of an earlier agent it ended. */
const endedLeftovers = (lab: TunnelLab) =>
  lab.agent.withMessage('ending a process left running by an earlier node agent that did not stop it');

describe('an OpenVPN client revoked after its node agent was killed and started again loses its tunnel', () => {
  let lab: TunnelLab;
  let laptop: OpenVpnClient | null = null;
  let commonName = '';
  let gateway = '';

  before(async () => {
    lab = await startTunnelLab({
      profile: {
        profileId: PROFILE,
        displayName: 'Staff',
        wRangeFour: undefined,
        wRangeSix: undefined,
        // One UDP and one TCP server on port 1194.
        oRangeFour: '198.19.60.0/24',
        oRangeSix: 'fd00:60::/64',
      },
    });
    await lab.portal.reconcile();
  });

  after(async () => {
    try {
      await laptop?.stop();
    } finally {
      await lab?.close();
    }
  });

  test('the device connects to the node over OpenVPN', async () => {
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: PROFILE, display_name: 'Laptop' },
      { accept: OPENVPN },
    );
    assert.equal(created.status, 200, created.text);
    const [made] = await lab.portal.admin.userConfigurationList('alice');
    assert.ok(made !== undefined, 'the configuration is listed');
    commonName = made.connection_id;
    const file = join(lab.directory, 'laptop.ovpn');
    await writeFile(file, created.text, { mode: 0o600 });
    const tun = lab.lab.interfaceName('tun');
    laptop = new OpenVpnClient(lab.client, file, ['--dev', tun]);
    await laptop.waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
    const { stdout } = await lab.client.exec('ip', ['-o', '-4', 'address', 'show', 'dev', tun]);
    const ipFour = /inet ([0-9.]+)\//.exec(stdout)?.[1] ?? '';
    // The server's tunnel address is the first host of the client's process range (a /25).
    gateway = Number(ipFour.split('.')[3]) < 128 ? '198.19.60.1' : '198.19.60.129';
    assert.equal((await lab.client.run('ping', ['-c', '1', '-w', '10', gateway])).exitCode, 0, 'ping');
  });

  test("after kill -9 of the agent and a new start, only the new agent's servers run, and they list the device", async () => {
    const before = await pidsOf(lab.node, 'openvpn');
    assert.equal(before.length, 2, `the agent runs a UDP and a TCP server: ${before.join(', ')}`);
    await killAgentOnly(lab);
    await lab.startAgent();
    await until(
      "the node lists the device's connection again",
      async () =>
        ((await lab.portal.admin.connectionList(true))[PROFILE] ?? [])
          .map((entry) => entry.connection_id)
          .includes(commonName),
      // A client whose handshake was cut (a server that ended or restarted under it) waits out
      // OpenVPN's 60 s hand-window before it tries again: allow for that once.
      120_000,
    ).catch((error: unknown) => {
      // What the client and the new agent did is what tells why it did not come back.
      const agentLog = lab.agent.lines.map((line) => JSON.stringify(line)).join('\n');
      throw new Error(`${String(error)}\nthe client's log:\n${laptop?.output}\nthe new agent's log:\n${agentLog}`);
    });
    const now = await pidsOf(lab.node, 'openvpn');
    assert.deepEqual(
      now.filter((pid) => before.includes(pid)),
      [],
      `no OpenVPN server of the killed agent still runs (before: ${before.join(', ')}; now: ${now.join(', ')})`,
    );
    assert.equal(now.length, 2, `the new agent runs its two servers: ${now.join(', ')}`);
    assert.deepEqual(
      endedLeftovers(lab)
        .map((line) => [line['program'], line['pid']])
        .sort(),
      before.map((pid) => ['openvpn', pid]),
      'the new agent logged each server it ended',
    );
  });

  test('disabling the user then ends the tunnel within seconds, and the reconnect is refused', async () => {
    assert.ok(laptop !== null, 'the laptop is connected');
    const disabled = await lab.portal.post('/disable_user', { user_id: 'alice' });
    assert.equal(disabled.status, 204, disabled.text);
    const receipt = await lab.portal.admin.revocation(disabled.headers.get(REVOCATION_HEADER) ?? '');
    assert.equal(receipt.state, 'applied', JSON.stringify(receipt));
    const limit = timeLimit(15_000);
    let answered = true;
    while (answered && !limit.passed())
      answered = (await lab.client.run('ping', ['-c', '1', '-W', '1', gateway])).exitCode === 0;
    assert.equal(answered, false, `the tunnel still carries pings ${limit.elapsedMs()} ms after the revocation`);
    await laptop.waitFor(AUTH_FAILED, 'AUTH_FAILED', 30_000);
  });
});

describe('a WireGuard device revoked after its node agent was killed and started again loses its tunnel', () => {
  let lab: TunnelLab;

  before(async () => {
    // The lab's node has no kernel WireGuard: the agent runs wireguard-go.
    lab = await startTunnelLab();
  });

  after(async () => {
    await lab?.close();
  });

  test('after kill -9 of the agent and a new start, the new agent runs the one wireguard-go of the interface', async () => {
    const device = await lab.provisionDevice('bob', 'Phone');
    assert.equal(await lab.ping(10), true, 'ping through the tunnel');
    // The agent notes the device's endpoint, so that a new interface greets it at once.
    await until(
      "the node notes the device's endpoint",
      async () => (await readFile(lab.endpointFile, 'utf8').catch(() => '')).includes(device.publicKey),
      15_000,
    );
    const before = await pidsOf(lab.node, 'wireguard-go');
    assert.deepEqual(before, [lab.wireguardGoPid()], 'the agent runs one wireguard-go');
    await killAgentOnly(lab);
    await lab.startAgent();
    const now = await pidsOf(lab.node, 'wireguard-go');
    assert.deepEqual(
      now.filter((pid) => before.includes(pid)),
      [],
      `the killed agent's wireguard-go is gone (before: ${before.join(', ')}; now: ${now.join(', ')})`,
    );
    assert.deepEqual(now, [lab.wireguardGoPid()], "one wireguard-go, the new agent's");
    assert.deepEqual(
      endedLeftovers(lab).map((line) => [line['program'], line['pid']]),
      before.map((pid) => ['wireguard-go', pid]),
      'the new agent logged the wireguard-go it ended',
    );
    await until('the device pings through the new interface', () => lab.ping(1), 30_000);
  });

  test('disabling the user then ends the tunnel within seconds', async () => {
    const disabled = await lab.portal.post('/disable_user', { user_id: 'bob' });
    assert.equal(disabled.status, 204, disabled.text);
    const { failed, afterMs } = await lab.untilPingFails(15_000);
    assert.equal(failed, true, `the tunnel still carries pings ${afterMs} ms after the revocation`);
    assert.deepEqual([...(await lab.peersOnNode()).keys()], [], 'no peer is left on the interface');
  });

  test('a SIGTERM then leaves nothing behind on the node', async () => {
    assert.equal(await lab.agent.stop(), 0);
    assert.deepEqual(await pidsOf(lab.node, 'wireguard-go'), [], 'no wireguard-go is left');
    assert.notEqual((await lab.node.run('ip', ['link', 'show', 'dev', lab.nodeInterface])).exitCode, 0, 'no interface');
  });
});
