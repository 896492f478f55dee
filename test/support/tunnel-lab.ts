// The shared stage of the end-to-end tests: the real portal on the host, the real node agent
// (`vpn-portal node`, with wireguard-go) as a process in namespace "node", and, when asked, a
// managed device in namespace "client" behind the node. The portal listens on the host end of
// a veth link to the node (a namespace cannot reach the host's loopback), the agent on the
// node end; the device reaches the node over a second link. Everything is removed at close().
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PortalConfigFile, ProfileConfigFile } from '../../src/config/schema.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import type { Logger } from 'pino';
import type { Clock } from '../../src/shared/time.js';
import { NetnsLab, wireGuardPeers, type Namespace } from './netns.js';
import { NodeAgentProcess } from './node-agent-process.js';
import { startTestPortal, type TestPortal } from './test-portal.js';
import { timeLimit, until } from './until.js';

export const LAB_PROFILE = 'employees';
/** The node's tunnel address in the lab's default WireGuard range. */
export const LAB_GATEWAY = '198.19.44.1';

/** The lab's addresses, for options that must name them. */
export interface LabAddresses {
  /** The node's address on the client's link: its WireGuard endpoint and OpenVPN remote. */
  readonly nodeAddressForClient: string;
  /** The node's address on the portal's link: where its vpn-daemon listens. */
  readonly nodeAddressForPortal: string;
  /** The internet host's IPv4 and IPv6 addresses (meaningful with `internet`). */
  readonly internetFour: string;
  readonly internetSix: string;
}

export interface TunnelLabOptions {
  /** Merged over the lab's WireGuard profile (198.19.44.0/24, fd00:44::/64, no default gateway); `undefined` removes a key. */
  readonly profile?: Partial<ProfileConfigFile> | ((addresses: LabAddresses) => Partial<ProfileConfigFile>);
  /** Merged over the portal's configuration. */
  readonly portalConfig?: Partial<PortalConfigFile> | ((addresses: LabAddresses) => Partial<PortalConfigFile>);
  /** Merged over the node agent's configuration (node.json). */
  readonly agentConfig?: (addresses: LabAddresses) => Record<string, unknown>;
  /** Whether a client namespace is made (default: yes). */
  readonly client?: boolean;
  /**
   * Whether a namespace "internet" is linked to the node, standing for the Internet behind it:
   * the node's default routes (IPv4 and IPv6) point there, and it has no route to the client
   * ranges, so it answers clients only when the node masquerades them.
   */
  readonly internet?: boolean;
  /** Whether the agent is started right away (default: yes). */
  readonly startAgent?: boolean;
  readonly clock?: Clock;
  /** Further portal instances on the same database (PostgreSQL), for scale-out stories. */
  readonly extraPortals?: number;
  /** The portal's logger (default: silent), to read what it logged. */
  readonly logger?: Logger;
  /** A data directory the test owns (test-portal.ts), to restart the portal on a changed configuration. */
  readonly dataDir?: string;
  /** The portal's `database` option (test-portal.ts): a database the test made and fills before the portal starts. */
  readonly database?: string;
  /**
   * Runs once the lab's addresses are known, before the portal starts, with the portal's
   * configuration (without `dataDir` and `database`): to prepare the portal's data directory and
   * database as an administrator would before the first start.
   */
  readonly beforePortal?: (portalConfig: Partial<PortalConfigFile>, addresses: LabAddresses) => Promise<void>;
  /**
   * A second node (number 1) in namespace "node2", reachable from the portal only (no client
   * link): the profile then runs on both, node 1 with 198.19.46.0/24 and fd00:46::/64.
   */
  readonly secondNode?: boolean;
}

/** The second node of a lab made with `secondNode`. */
export interface SecondNode {
  readonly namespace: Namespace;
  readonly nodeUrl: string;
  /** Its agent's configuration file, to change `maintenanceMode` and send SIGHUP. */
  readonly agentConfigFile: string;
  readonly agent: NodeAgentProcess;
  peersOnNode(): Promise<Map<string, string[]>>;
}

export interface TunnelLab {
  readonly lab: NetnsLab;
  readonly directory: string;
  readonly node: Namespace;
  /** Throws when the lab was made without a client. */
  readonly client: Namespace;
  readonly portal: TestPortal;
  /** Further instances sharing the first one's database and keys. */
  readonly extraPortals: readonly TestPortal[];
  /** The node's address on the client's link: its WireGuard endpoint. */
  readonly nodeAddressForClient: string;
  /** The client's address on its link to the node: where its packets come from. */
  readonly clientAddress: string;
  /** Throws unless the lab was made with `secondNode`. */
  readonly secondNode: SecondNode;
  /** Throws when the lab was made without `internet`. */
  readonly internet: Namespace;
  /** The internet host's addresses (on its link to the node), and the node's on that link. */
  readonly internetAddresses: {
    readonly four: string;
    readonly six: string;
    readonly nodeFour: string;
    readonly nodeSix: string;
  };
  /** The client's end of its link to the node (for nftables rules in the client namespace). */
  readonly clientLinkInterface: string;
  /** Where the agent serves the vpn-daemon protocol. */
  readonly nodeUrl: string;
  readonly nodeInterface: string;
  /** The agent's endpoint memory (endpoint-memory.ts). */
  readonly endpointFile: string;
  /** The agent's configuration file (node.json). */
  readonly agentConfigFile: string;
  /** The running agent; throws while it is stopped. */
  readonly agent: NodeAgentProcess;
  startAgent(): Promise<NodeAgentProcess>;
  stopAgent(): Promise<void>;
  /** The pid of the agent's wireguard-go. */
  wireguardGoPid(): number;
  /** Public key → allowed IPs on the node's interface, as `wg show` reports them. */
  peersOnNode(): Promise<Map<string, string[]>>;
  /** POST /create as a WireGuard file for `userId`, brought up with wg-quick in the client namespace. */
  provisionDevice(
    userId: string,
    displayName: string,
  ): Promise<{ interfaceName: string; publicKey: string; file: string }>;
  /** One ping from the client to `target` (default: the node's tunnel address), waiting up to `seconds`. */
  ping(seconds: number, target?: string): Promise<boolean>;
  /**
   * Pings the node's tunnel address, one ping of up to 1 s after the other, until one fails or
   * `ms` went by (a timeLimit: the wall clock may be stepped meanwhile): whether one failed, and
   * how long after the call.
   */
  untilPingFails(ms: number): Promise<{ readonly failed: boolean; readonly afterMs: number }>;
  close(): Promise<void>;
}

export async function startTunnelLab(options: TunnelLabOptions = {}): Promise<TunnelLab> {
  const lab = new NetnsLab();
  const directory = await mkdtemp(join(tmpdir(), 'tunnel-lab-'));
  let portal: TestPortal | undefined;
  const extraPortals: TestPortal[] = [];
  let agent: NodeAgentProcess | undefined;
  let secondAgentToStop: NodeAgentProcess | undefined;
  const close = async (): Promise<void> => {
    try {
      await agent?.stop();
      await secondAgentToStop?.stop();
    } finally {
      await lab.cleanup();
      for (const extra of extraPortals) await extra.close();
      await portal?.close();
      await rm(directory, { recursive: true, force: true });
    }
  };
  try {
    const node = await lab.namespace('node');
    const client = options.client === false ? null : await lab.namespace('client');
    const hostLink = lab.subnet();
    const clientLink = lab.subnet();
    await lab.vethPair(
      { namespace: null, address: `${hostLink.first}/30` },
      { namespace: node, address: `${hostLink.second}/30` },
    );
    const clientPair =
      client === null
        ? null
        : await lab.vethPair(
            { namespace: node, address: `${clientLink.first}/30` },
            { namespace: client, address: `${clientLink.second}/30` },
          );
    let internet: Namespace | null = null;
    const internetLink = lab.subnet();
    // A documentation prefix (RFC 3849) per lab, so parallel labs never share one.
    const internetSix = `2001:db8:${((Number.parseInt(lab.runId, 36) % 0xfff0) + 0x10).toString(16)}::`;
    const addresses: LabAddresses = {
      nodeAddressForClient: clientLink.first,
      nodeAddressForPortal: hostLink.second,
      internetFour: internetLink.second,
      internetSix: `${internetSix}2`,
    };
    if (options.internet === true) {
      internet = await lab.namespace('internet');
      const link = await lab.vethPair(
        { namespace: node, address: `${internetLink.first}/30` },
        { namespace: internet, address: `${internetLink.second}/30` },
      );
      await node.exec('ip', ['-6', 'address', 'add', `${internetSix}1/64`, 'dev', link.aName, 'nodad']);
      await internet.exec('ip', ['-6', 'address', 'add', `${internetSix}2/64`, 'dev', link.bName, 'nodad']);
      await node.exec('ip', ['route', 'add', 'default', 'via', internetLink.second]);
      await node.exec('ip', ['-6', 'route', 'add', 'default', 'via', `${internetSix}2`]);
    }
    const nodeUrl = `http://${hostLink.second}:41194`;
    let second: { namespace: Namespace; link: { first: string; second: string }; nodeUrl: string } | null = null;
    if (options.secondNode === true) {
      const namespace = await lab.namespace('node2');
      const link = lab.subnet();
      await lab.vethPair({ namespace: null, address: `${link.first}/30` }, { namespace, address: `${link.second}/30` });
      second = { namespace, link, nodeUrl: `http://${link.second}:41194` };
    }
    const perNode =
      second === null
        ? {}
        : {
            hostName: [clientLink.first, second.link.second],
            nodeUrl: [nodeUrl, second.nodeUrl],
            wRangeFour: ['198.19.44.0/24', '198.19.46.0/24'],
            wRangeSix: ['fd00:44::/64', 'fd00:46::/64'],
          };
    const profile: ProfileConfigFile = {
      profileId: LAB_PROFILE,
      displayName: 'Employees',
      hostName: clientLink.first,
      defaultGateway: false,
      wRangeFour: '198.19.44.0/24',
      wRangeSix: 'fd00:44::/64',
      nodeUrl,
      ...perNode,
      ...(typeof options.profile === 'function' ? options.profile(addresses) : options.profile),
    };
    const portalConfig: Partial<PortalConfigFile> = {
      // Reachable from the node's namespace; the Admin API accepts the test on that address.
      listen: { host: hostLink.first, port: 0 },
      adminApi: { allowList: [`${hostLink.first}/32`, '127.0.0.1/32'], trustedProxyList: [] },
      // The second node reaches the portal over its own link.
      ...(second === null ? {} : { listen: { host: '0.0.0.0', port: 0 } }),
      ProfileList: [profile],
      ...(typeof options.portalConfig === 'function' ? options.portalConfig(addresses) : options.portalConfig),
    };
    await options.beforePortal?.(portalConfig, addresses);
    portal = await startTestPortal({
      config: portalConfig,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.database === undefined ? {} : { database: options.database }),
    });
    for (let index = 0; index < (options.extraPortals ?? 0); index++) {
      extraPortals.push(
        await startTestPortal({ config: portalConfig, dataDir: portal.dataDir, database: portal.database }),
      );
    }

    const nodeInterface = lab.interfaceName('wgn');
    const agentConfigFile = join(directory, 'node.json');
    const endpointFile = join(directory, 'endpoints.json');
    await writeFile(
      agentConfigFile,
      JSON.stringify({
        // Named by address: the portal may listen on every address (0.0.0.0) in a two-node lab.
        apiUrl: `http://${hostLink.first}:${new URL(portal.nodeApiUrl).port}${portal.portal.ctx.config.basePath}/node-api.php`,
        nodeNumber: 0,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
        listen: { host: hostLink.second, port: 41194 },
        WireGuard: { interfaceName: nodeInterface, endpointFile },
        // Kept in the lab's folder, never in /var/lib or /run of the test machine.
        OpenVPN: { configDir: join(directory, 'node-openvpn'), managementDir: join(directory, 'node-run') },
        ...options.agentConfig?.(addresses),
      }),
    );
    const portalPort = new URL(portal.nodeApiUrl).port;
    const startAgent = async (): Promise<NodeAgentProcess> => {
      const started = new NodeAgentProcess(node, agentConfigFile);
      agent = started;
      await withPathReport(started.ready(), node, {
        portal: hostLink.first,
        node: hostLink.second,
        port: portalPort,
      });
      return started;
    };
    if (options.startAgent !== false) await startAgent();

    let secondAgent: NodeAgentProcess | undefined;
    let secondNode: SecondNode | null = null;
    if (second !== null) {
      const secondInterface = lab.interfaceName('wgm');
      const secondConfigFile = join(directory, 'node2.json');
      await writeFile(
        secondConfigFile,
        JSON.stringify({
          apiUrl: `http://${second.link.first}:${portalPort}${portal.portal.ctx.config.basePath}/node-api.php`,
          nodeNumber: 1,
          nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(1)),
          listen: { host: second.link.second, port: 41194 },
          WireGuard: { interfaceName: secondInterface, endpointFile: join(directory, 'endpoints2.json') },
          OpenVPN: { configDir: join(directory, 'node2-openvpn'), managementDir: join(directory, 'node2-run') },
        }),
      );
      secondAgent = new NodeAgentProcess(second.namespace, secondConfigFile);
      secondAgentToStop = secondAgent;
      await withPathReport(secondAgent.ready(), second.namespace, {
        portal: second.link.first,
        node: second.link.second,
        port: portalPort,
      });
      const started = secondAgent;
      const namespace = second.namespace;
      secondNode = {
        namespace,
        nodeUrl: second.nodeUrl,
        agentConfigFile: secondConfigFile,
        agent: started,
        peersOnNode: () => wireGuardPeers(namespace, secondInterface),
      };
    }

    // The portal started before its nodes and may hold one for down until its probe (every
    // second) sees it answer; a create meanwhile skips that node, to be reconciled later. A test
    // that creates at once should find its peer on the node: the lab is ready when every
    // started node is up for the portal too.
    const startedNodes = [
      ...(options.startAgent !== false ? [asNodeNumber(0)] : []),
      ...(secondNode !== null ? [asNodeNumber(1)] : []),
    ];
    const firstPortal = portal;
    await until('the portal sees every started node answer', async () =>
      startedNodes.every((nodeNumber) => !firstPortal.portal.ctx.nodes.isDown(nodeNumber)),
    );

    const requireClient = (): Namespace => {
      if (client === null) throw new Error('this lab has no client namespace');
      return client;
    };
    const ping = async (seconds: number, target = LAB_GATEWAY): Promise<boolean> => {
      const result = await requireClient().run('ping', [
        '-c',
        '1',
        '-i',
        '0.2',
        '-W',
        '1',
        '-w',
        String(seconds),
        target,
      ]);
      return result.exitCode === 0;
    };
    return {
      lab,
      directory,
      node,
      get client() {
        return requireClient();
      },
      portal: firstPortal,
      extraPortals,
      nodeAddressForClient: clientLink.first,
      clientAddress: clientLink.second,
      get secondNode() {
        if (secondNode === null) throw new Error('this lab has no second node');
        return secondNode;
      },
      get internet() {
        if (internet === null) throw new Error('this lab has no internet namespace');
        return internet;
      },
      internetAddresses: {
        four: internetLink.second,
        six: `${internetSix}2`,
        nodeFour: internetLink.first,
        nodeSix: `${internetSix}1`,
      },
      get clientLinkInterface() {
        if (clientPair === null) throw new Error('this lab has no client namespace');
        return clientPair.bName;
      },
      nodeUrl,
      nodeInterface,
      endpointFile,
      agentConfigFile,
      get agent() {
        if (agent === undefined) throw new Error('the node agent is stopped');
        return agent;
      },
      startAgent,
      async stopAgent() {
        await agent?.stop();
        agent = undefined;
      },
      wireguardGoPid() {
        const line = agent?.withMessage('created WireGuard interface with wireguard-go').at(-1);
        const pid = Number(line?.['pid']);
        assert.ok(Number.isInteger(pid) && pid > 0, 'the agent logged the pid of its wireguard-go');
        return pid;
      },
      peersOnNode: () => wireGuardPeers(node, nodeInterface),
      async provisionDevice(userId, displayName) {
        const device = requireClient();
        const created = await firstPortal.post(
          '/create',
          { user_id: userId, profile_id: LAB_PROFILE, display_name: displayName },
          { accept: 'application/x-wireguard-profile' },
        );
        assert.equal(created.status, 200, created.text);
        const interfaceName = lab.interfaceName('wgc');
        const file = join(directory, `${interfaceName}.conf`);
        await writeFile(file, created.text, { mode: 0o600 });
        await device.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });
        const publicKey = (await device.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
        return { interfaceName, publicKey, file };
      },
      ping,
      async untilPingFails(ms) {
        const limit = timeLimit(ms);
        let failed = false;
        while (!failed && !limit.passed()) failed = !(await ping(1));
        return { failed, afterMs: limit.elapsedMs() };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * `ready`, or its failure with what the host and the node's namespace say of the path between
 * the agent and the portal: an agent that never reached the portal (seen once on a loaded CI
 * machine) otherwise leaves only its own timeouts to go by.
 */
async function withPathReport<T>(
  ready: Promise<T>,
  node: Namespace,
  path: { readonly portal: string; readonly node: string; readonly port: string },
): Promise<T> {
  try {
    return await ready;
  } catch (error) {
    const host = (args: string[]): string => {
      const shown = spawnSync(args[0] ?? '', args.slice(1), { encoding: 'utf8' });
      return `$ ${args.join(' ')}\n${shown.stdout}${shown.stderr}`;
    };
    const inNode = async (args: string[]): Promise<string> => {
      const shown = await node.run(args[0] ?? '', args.slice(1));
      return `$ (node) ${args.join(' ')}\n${shown.stdout}${shown.stderr}`;
    };
    let fromHost: string;
    try {
      const answer = await fetch(`http://${path.portal}:${path.port}/`, { signal: AbortSignal.timeout(5_000) });
      fromHost = `the portal answered the host with ${answer.status}`;
    } catch (reason) {
      fromHost = `the portal did not answer the host: ${String(reason)} (${String((reason as Error).cause)})`;
    }
    const report = [
      fromHost,
      host(['ip', '-o', '-4', 'address', 'show', 'to', `${path.portal}/30`]),
      host(['ip', 'route', 'get', path.node]),
      host(['ss', '-tnH', 'state', 'all', `( sport = :${path.port} or dport = :${path.port} )`]),
      await inNode(['ip', '-o', '-4', 'address']),
      await inNode(['ip', 'route', 'get', path.portal]),
    ];
    throw new Error(`${(error as Error).message}\nthe path to the portal:\n${report.join('\n')}`, { cause: error });
  }
}
