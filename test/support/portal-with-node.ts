// A real portal and a real node agent that know each other, as an administrator sets them up:
// the portal's profiles point at the agent's vpn-daemon URL, and the agent fetches its server
// configuration from the portal's Node API with the node key the portal generated. The agent
// runs in this process; its wireguard-go interface lives in a network namespace of its own.
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import type { Clock } from '../../src/shared/time.js';
import { startNodeAgent, type RunningNodeAgent } from '../../src/agent/agent.js';
import { parseNodeAgentConfig } from '../../src/agent/config.js';
import { readNodeKey } from '../../src/agent/node-key.js';
import { freePort } from './free-port.js';
import { NetnsLab, wireGuardPeers, type Namespace } from './netns.js';
import { startTestPortal, type TestPortal } from './test-portal.js';

export interface PortalWithNode {
  readonly portal: TestPortal;
  readonly agent: RunningNodeAgent;
  readonly node: Namespace;
  /** The agent's WireGuard interface in `node`. */
  readonly interfaceName: string;
  /** Public key → allowed IPs of every peer on the node's interface, as `wg show` reports them. */
  peersOnNode(): Promise<Map<string, string[]>>;
  /** Stops the agent (its interface and peers go with it), as a node outage. */
  stopAgent(): Promise<void>;
  /** Starts the agent again on the same address; it comes back with no peers. */
  startAgent(): Promise<void>;
  /** Stops agent and portal and removes the namespace, the interface and every process. */
  close(): Promise<void>;
}

export async function startPortalWithNode(options: {
  /** The portal's configuration, given the URL where node 0 serves the vpn-daemon protocol. */
  readonly config: (nodeUrl: string) => Partial<PortalConfigFile>;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** The portal's logger and database, as startTestPortal takes them. */
  readonly logger?: Logger;
  readonly database?: string;
}): Promise<PortalWithNode> {
  const lab = new NetnsLab();
  let portal: TestPortal | undefined;
  let agent: RunningNodeAgent | undefined;
  const close = async (): Promise<void> => {
    try {
      await agent?.stop();
      await portal?.close();
    } finally {
      await lab.cleanup();
    }
  };
  try {
    const node = await lab.namespace('node');
    const interfaceName = lab.interfaceName('wgn');
    const port = await freePort();
    portal = await startTestPortal({
      config: options.config(`http://127.0.0.1:${port}`),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.database === undefined ? {} : { database: options.database }),
    });
    const nodeConfig = parseNodeAgentConfig(
      {
        // Tests run side by side in the host's namespace: any free port.
        metrics: { listen: '127.0.0.1:0' },
        apiUrl: portal.nodeApiUrl,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
        listen: { host: '127.0.0.1', port },
        WireGuard: { interfaceName, endpointFile: join(portal.dataDir, 'endpoints.json') },
      },
      'node.json',
    );
    const nodeKey = (await readNodeKey(nodeConfig.nodeKeyFile)).key;
    const launchAgent = () =>
      startNodeAgent({
        config: nodeConfig,
        nodeKey,
        logger: pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
        version: 'test',
        runner: node.runner(),
      });
    agent = await launchAgent();
    // The agent came up after the portal's first reconcile pass; the next one finds it.
    await portal.reconcile();

    return {
      portal,
      get agent() {
        if (agent === undefined) throw new Error('the node agent is stopped');
        return agent;
      },
      node,
      interfaceName,
      async stopAgent() {
        await agent?.stop();
        agent = undefined;
      },
      async startAgent() {
        agent = await launchAgent();
      },
      peersOnNode: () => wireGuardPeers(node, interfaceName),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
