// `vpn-portal admin …` run inside the test process: the command's own code (src/cli/admin.ts)
// against the real portal over HTTP, its lines captured as the process would print them, and
// its exit code. A process costs some 0.25 s of CPU to start and load; the admin tests run a
// hundred commands, and the few that are about the process itself (exit codes, the portal's
// configuration file, --help) start one with runCli (portal-process.ts).
import { runAdminCommand } from '../../src/cli/admin.js';
import type { CliResult } from './portal-process.js';
import type { TestPortal } from './test-portal.js';

/** The environment that points `vpn-portal admin` at a test portal, with its key file. */
export function adminCommandEnv(portal: TestPortal): NodeJS.ProcessEnv {
  return {
    VPN_PORTAL_URL: `${portal.portal.url}/vpn-user-portal/`,
    VPN_PORTAL_KEY_FILE: portal.portal.ctx.keys.adminApiKeyPath,
  };
}

/** Runs `vpn-portal admin ARGS` with the test's environment and `env` on top, as runCli would. */
export async function runAdminInProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runAdminCommand(
    args,
    { ...process.env, ...env },
    {
      // console.log and console.error, which the command line gives it, end each text with a newline.
      print: (text) => stdout.push(`${text}\n`),
      printError: (text) => stderr.push(`${text}\n`),
    },
  );
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}
