// The OpenVPN server files on disk: written as the portal rendered them, 0600 in a 0700 folder
// (they hold the server's private key), and checked first for what the agent relies on: the
// management socket where the agent looks for it, and `management-client-auth`, without which
// OpenVPN would admit every holder of a certificate without asking.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { OpenVpnServerFile } from '../node-assignment.js';

/** sun_path holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;
/** Names of server files this agent writes (what the portal may send). */
const SERVER_FILE_NAME = /^[a-zA-Z0-9-.]+-\d+\.conf$/;

export interface ServerFileCheck {
  /** Reasons not to run the file. */
  readonly errors: readonly string[];
  /** Things that will not work as expected. */
  readonly warnings: readonly string[];
}

/** `<managementDir>/<profileId>-<n>.sock`, the socket the portal writes into the file. */
export function socketPathOf(managementDir: string, file: Pick<OpenVpnServerFile, 'name'>): string {
  return join(managementDir, file.name.replace(/\.conf$/, '.sock'));
}

/** `<managementDir>/<profileId>-<n>.pid`: the running process of the file, noted by the agent. */
export function pidFileOf(managementDir: string, file: Pick<OpenVpnServerFile, 'name'>): string {
  return join(managementDir, file.name.replace(/\.conf$/, '.pid'));
}

/** The pid records in the management folder (pidFileOf), whatever file they were for. */
export async function pidFilesIn(managementDir: string): Promise<string[]> {
  try {
    return (await readdir(managementDir))
      .filter((name) => /^[a-zA-Z0-9-.]+-\d+\.pid$/.test(name))
      .map((name) => join(managementDir, name));
  } catch {
    return [];
  }
}

/** Checks the directives the agent depends on; the text itself is never quoted in a message. */
export function checkServerFile(content: string, socketPath: string): ServerFileCheck {
  const errors: string[] = [];
  const warnings: string[] = [];
  const directives = directivesOf(content);
  const has = (name: string): boolean => directives.some((words) => words[0] === name);

  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    errors.push(`the management socket path ${socketPath} is longer than ${MAX_SOCKET_PATH_BYTES} bytes`);
  }
  const management = directives.filter((words) => words[0] === 'management');
  if (!management.some((words) => words[1] === socketPath && words[2] === 'unix')) {
    errors.push(`no "management ${socketPath} unix" line`);
  }
  if (!has('management-client-auth'))
    errors.push('no "management-client-auth" line: OpenVPN would admit clients without asking');
  // Without it OpenVPN insists on a user name and password, which eduVPN clients never send.
  if (!has('auth-user-pass-optional') && !has('auth-user-pass-verify')) {
    warnings.push('no "auth-user-pass-optional" line: OpenVPN refuses clients that send no user name and password');
  }
  return { errors, warnings };
}

/** Creates the folder if needed and makes it 0700. */
export async function preparePrivateDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700);
}

/** Writes the file 0600 under a temporary name, then renames it into place; returns its path. */
export async function writeServerFile(directory: string, name: string, content: string): Promise<string> {
  const target = join(directory, name);
  const temporary = join(directory, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temporary, content, { mode: 0o600, flag: 'wx' });
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return target;
}

/** Removes server files (and left-over temporary files) that are not in `keep`. */
export async function removeOtherServerFiles(directory: string, keep: ReadonlySet<string>): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const stale = (SERVER_FILE_NAME.test(name) && !keep.has(name)) || /^\..*\.tmp$/.test(name);
    if (!stale) continue;
    await rm(join(directory, name), { force: true });
    removed.push(name);
  }
  return removed;
}

/** The directives of a configuration file: words per line, without comments and inline blocks. */
function directivesOf(content: string): string[][] {
  const directives: string[][] = [];
  let block: string | null = null;
  for (const raw of content.split(/\r?\n/)) {
    const line = raw.trim();
    if (block !== null) {
      if (line === `</${block}>`) block = null;
      continue;
    }
    const opening = /^<([a-zA-Z0-9-]+)>$/.exec(line);
    if (opening !== null) {
      block = opening[1] ?? null;
      continue;
    }
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const words = line.split(/\s+/).map((word) => word.replace(/^(["'])(.*)\1$/, '$2'));
    // OpenVPN also reads a directive written as its command-line option ("--management").
    directives.push([(words[0] ?? '').replace(/^--/, ''), ...words.slice(1)]);
  }
  return directives;
}
