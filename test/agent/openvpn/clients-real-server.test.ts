// The agent's decisions about OpenVPN clients when its management connection goes away and comes
// back, against a real `openvpn` server and real clients in network namespaces: a revoked client
// must not be admitted after the reconnect. The management connection is the agent's own,
// really closed and opened again; only the portal's answers are given by the test.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { OpenVpnClients, type ManagementCommands, type OpenVpnPortal } from '../../../src/agent/openvpn/clients.js';
import { ManagementConnection, ManagementUnavailableError } from '../../../src/agent/openvpn/management.js';
import { parseStatusClients } from '../../../src/agent/openvpn/status.js';
import type { ConnectRequest, ConnectVerdict } from '../../../src/agent/portal-client.js';
import { NetnsLab, requireRoot, type Namespace } from '../../support/netns.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../../support/openvpn-client.js';
import { clientFileText, serverFileText } from '../../support/openvpn-files.js';
import { randomCommonName, TestPki } from '../../support/openvpn-pki.js';
import { until } from '../../support/until.js';

const PROFILE = 'employees';

/** The portal's answers: allowed until revoked; an answer the test holds is given when it says. */
class HeldPortal implements OpenVpnPortal {
  readonly asked: ConnectRequest[] = [];
  revoked = false;
  /** When set, the next question waits for release(), answered as it stood when asked. */
  holdNext = false;
  #held: (() => void) | null = null;

  async authorizeConnect(request: ConnectRequest): Promise<ConnectVerdict> {
    this.asked.push(request);
    const verdict: ConnectVerdict = this.revoked
      ? { allowed: false, portalAnswered: true, reason: 'revoked' }
      : { allowed: true };
    if (this.holdNext) {
      this.holdNext = false;
      await new Promise<void>((resolve) => {
        this.#held = resolve;
      });
    }
    return verdict;
  }

  async reportDisconnect(): Promise<void> {}

  get holding(): boolean {
    return this.#held !== null;
  }

  release(): void {
    this.#held?.();
    this.#held = null;
  }
}

describe('an OpenVPN server whose management connection comes back', () => {
  const lab = new NetnsLab();
  let directory: string;
  let socketPath: string;
  let node: Namespace;
  let client: Namespace;
  let nodeAddress: string;
  let pki: TestPki;
  const devices: OpenVpnClient[] = [];

  before(async () => {
    requireRoot();
    const openvpn = spawnSync('openvpn', ['--version'], { encoding: 'utf8' });
    if (openvpn.error !== undefined || openvpn.status !== 0)
      throw new Error(`these tests need the openvpn program: ${String(openvpn.error ?? openvpn.stderr)}`);
    directory = await mkdtemp(join(tmpdir(), 'openvpn-clients-'));
    const managementDir = join(directory, 'run');
    await mkdir(managementDir, { recursive: true });
    socketPath = join(managementDir, `${PROFILE}-0.sock`);
    node = await lab.namespace('ovcnode');
    client = await lab.namespace('ovccli');
    const link = lab.subnet();
    await lab.vethPair(
      { namespace: node, address: `${link.first}/30` },
      { namespace: client, address: `${link.second}/30` },
    );
    nodeAddress = link.first;
    pki = await TestPki.create(join(directory, 'pki'));
    const serverFile = join(directory, 'server.conf');
    await writeFile(
      serverFile,
      serverFileText({
        profileId: PROFILE,
        processNumber: 0,
        proto: 'udp',
        port: 1194,
        device: lab.interfaceName('tun'),
        network: ['198.19.20.0/24', '255.255.255.0'],
        networkSix: 'fd00:20::/112',
        managementDir,
        pki,
        server: await pki.server('vpn.example.org', PROFILE),
      }),
      { mode: 0o600 },
    );
    lab.track(node.spawn('openvpn', ['--config', serverFile]));
  });

  after(async () => {
    try {
      for (const device of devices) await device.stop();
    } finally {
      await lab.cleanup();
      await rm(directory, { recursive: true, force: true });
    }
  });

  const device = async (commonName: string): Promise<OpenVpnClient> => {
    const file = join(directory, `client-${devices.length}.conf`);
    await writeFile(
      file,
      clientFileText({
        pki,
        client: await pki.client(PROFILE, commonName),
        remote: nodeAddress,
        port: 1194,
        proto: 'udp',
        device: lab.interfaceName('cl'),
      }),
      { mode: 0o600 },
    );
    const started = new OpenVpnClient(client, file);
    devices.push(started);
    return started;
  };

  test('a connection allowed a moment before its revocation is not admitted after a disconnect that found the management connection away', async () => {
    const portal = new HeldPortal();
    // The agent's management connection, closed and opened again by the test: the clients use whichever is current.
    let management: ManagementConnection;
    let resynced: Promise<void> = Promise.resolve();
    const commands: ManagementCommands = {
      command: (line) => management.command(line),
      commandWithBlock: (line, block) => management.commandWithBlock(line, block),
      query: (line) => management.query(line),
    };
    const clients = new OpenVpnClients({
      profileId: PROFILE,
      server: `${PROFILE}-0.conf`,
      management: commands,
      portal,
      logger: pino({ level: 'silent' }),
      reportRetryDelayMs: 1,
    });
    const open = (): ManagementConnection => {
      const connection = new ManagementConnection({
        socketPath,
        logger: pino({ level: 'silent' }),
        handlers: {
          onConnected: () => {
            resynced = clients.resync();
          },
          onDisconnected: () => undefined,
          onClient: (notification) => clients.handle(notification),
        },
      });
      connection.start();
      return connection;
    };
    /** Connections of the name OpenVPN gave an address (it also lists those still being decided or refused). */
    const connected = async (commonName: string): Promise<number> =>
      parseStatusClients(await management.query('status 3')).filter(
        (entry) => entry.commonName === commonName && entry.ipFour !== null,
      ).length;

    management = open();
    try {
      await revokedWhileAway();
    } finally {
      await management.close();
    }

    async function revokedWhileAway(): Promise<void> {
      await until('the management connection', async () => management.connected, 15_000);
      const commonName = randomCommonName();
      const first = await device(commonName);
      await first.waitFor(CONNECTED, 'the first connection');
      // The device moves to another network: its connection ends without a word (OpenVPN holds
      // it until keepalive gives up, a minute), and it connects again from there; the portal
      // allows that, its answer on the way.
      first.child.kill('SIGKILL');
      await first.exited();
      portal.holdNext = true;
      const second = await device(commonName);
      await until('the second connection asked about', async () => portal.holding, 20_000);

      // Revoked meanwhile; the disconnect finds the management connection away.
      portal.revoked = true;
      await management.close();
      await assert.rejects(clients.disconnect(commonName), ManagementUnavailableError);

      // Back: the clients are listed and those of the name ended, then the portal's answer arrives.
      management = open();
      await until('the management connection again', async () => management.connected, 15_000);
      await resynced;
      portal.release();

      await second.waitFor(AUTH_FAILED, 'that it was refused', 20_000);
      assert.equal(second.connections(), 0, 'the revoked connection never came up');
      await clients.settle();
      // A killed connection stays listed for a few seconds, until OpenVPN's scheduled exit of it.
      await until('nobody of that name connected', async () => (await connected(commonName)) === 0, 15_000);
    }
  });
});
