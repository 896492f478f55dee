// The node agent of the agent benchmark as a process of its own, as on a node: so its CPU time
// and memory can be read from /proc apart from the portal's, and so it can be stopped and
// started again (the restart figure). Reads its input as JSON on stdin, runs `ip`, `wg` and
// wireguard-go inside the benchmark's network namespace, prints one JSON line once it serves,
// and stops cleanly (removing the interface it made) on SIGTERM.
import { text } from 'node:stream/consumers';
import { pino } from 'pino';
import { startNodeAgent } from '../src/agent/agent.js';
import { parseNodeAgentConfig } from '../src/agent/config.js';
import { readNodeKey } from '../src/agent/node-key.js';
import { createCommandRunner } from '../src/agent/process/command-runner.js';

export interface AgentProcessInput {
  /** The agent's configuration file, as JSON. */
  readonly config: unknown;
  /** The network namespace its commands run in. */
  readonly namespace: string;
}

/** What the process prints once it serves. */
export interface AgentProcessReady {
  readonly metricsUrl: string | null;
}

const input = JSON.parse(await text(process.stdin)) as AgentProcessInput;
const config = parseNodeAgentConfig(input.config, 'node.json');
const agent = await startNodeAgent({
  config,
  nodeKey: (await readNodeKey(config.nodeKeyFile)).key,
  logger: pino({ level: 'warn' }, pino.destination(2)),
  version: 'bench',
  runner: createCommandRunner({ prefix: ['ip', 'netns', 'exec', input.namespace] }),
});
const ready: AgentProcessReady = { metricsUrl: agent.metricsUrl };
process.stdout.write(`${JSON.stringify(ready)}\n`);
process.once('SIGTERM', () => {
  void agent.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
