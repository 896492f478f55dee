// `vpn-portal node --config FILE`: runs the VPN node agent until SIGTERM or SIGINT, then shuts
// it down cleanly (HTTP closed, pending peer changes applied, its own interface removed).
import { once } from 'node:events';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { ConfigError } from '../config/config-error.js';
import { startNodeAgent } from '../agent/agent.js';
import { readAgentVersion } from '../agent/version.js';
import { loadNodeAgentConfig, NodeAgentConfigError } from '../agent/config.js';
import { NodeKeyError, readNodeKey } from '../agent/node-key.js';
import { NatSettingsError } from '../net/deterministic-nat.js';

const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

export async function runNode(options: { configPath: string }): Promise<void> {
  const { config, nodeKey } = await loadOperatorInput(options.configPath);
  const logger = pino({ name: 'vpn-portal-node', level: config.logLevel });
  if (nodeKey.permissionWarning !== null) logger.warn(nodeKey.permissionWarning);

  const shutdown = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shutdown.signal.aborted) {
      logger.info({ signal }, 'already shutting down');
      return;
    }
    logger.info({ signal }, 'shutting down');
    shutdown.abort();
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);

  try {
    const agent = await startNodeAgent(
      { config, nodeKey: nodeKey.key, logger, version: await readAgentVersion() },
      shutdown.signal,
    );
    // SIGHUP re-reads the file for `maintenanceMode`: a node is drained without a restart.
    const onReload = (): void => {
      loadNodeAgentConfig(options.configPath).then(
        (reloaded) => agent.setMaintenanceMode(reloaded.maintenanceMode),
        (error: unknown) =>
          logger.error(
            { reason: (error as Error).message },
            'SIGHUP: cannot read the configuration again; nothing changed',
          ),
      );
    };
    process.on('SIGHUP', onReload);
    if (!shutdown.signal.aborted) await once(shutdown.signal, 'abort');
    process.off('SIGHUP', onReload);
    await agent.stop();
  } catch (error) {
    // A signal during start-up is a normal end: startNodeAgent has already undone its work.
    // Client ranges that do not fit the node's deterministic NAT are the operator's to fix.
    if (error instanceof NatSettingsError)
      throw new ConfigError(
        `${resolve(options.configPath)}: "nat" does not fit this node's client ranges: ${error.message}`,
      );
    if (!shutdown.signal.aborted) throw error;
    logger.info('node agent stopped during start-up');
  } finally {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onSignal);
  }
}

/** Mistakes in the config or key file are the operator's: reported as ConfigError (message, no stack). */
async function loadOperatorInput(configPath: string) {
  try {
    const config = await loadNodeAgentConfig(configPath);
    return { config, nodeKey: await readNodeKey(config.nodeKeyFile) };
  } catch (error) {
    if (error instanceof NodeAgentConfigError || error instanceof NodeKeyError) throw new ConfigError(error.message);
    throw error;
  }
}
