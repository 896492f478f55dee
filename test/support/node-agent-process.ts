// Runs `vpn-portal node --config FILE` the way an administrator does, inside a network
// namespace, and reads its pino log lines as they arrive.
import { LoggedProcess, START_TIMEOUT_MS, vpnPortalCommand, type LogLine } from './logged-process.js';
import type { Namespace } from './netns.js';

export type { LogLine } from './logged-process.js';

export class NodeAgentProcess extends LoggedProcess {
  /** `main`: the CLI entry point to run, through tsx (default: this checkout's, see vpnPortalCommand). */
  constructor(namespace: Namespace, configFile: string, main?: string) {
    const [command = '', ...args] =
      main === undefined ? vpnPortalCommand() : [process.execPath, '--import', 'tsx', main];
    super(namespace.spawn(command, [...args, 'node', '--config', configFile]));
  }

  /** Resolves once the agent serves the vpn-daemon protocol. */
  ready(): Promise<LogLine> {
    return this.waitFor(
      (line) => line.msg === 'serving the vpn-daemon protocol',
      'serving the vpn-daemon protocol',
      START_TIMEOUT_MS,
    );
  }
}
