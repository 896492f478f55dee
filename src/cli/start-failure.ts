// What stops `serve` or `node` at start, or another command, and is the operator's to fix, said
// in one line instead of a stack trace: a database that cannot be reached or refuses the login,
// an address already in use, a folder open to other users, a file of another user. Recognised
// by name and code, so this module loads no database driver.
export function describeStartFailure(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  if (START_REFUSALS.has(error.name)) return error.message;
  const { code, syscall, address, port } = error as NodeJS.ErrnoException & { address?: string; port?: number };
  // A node host installs without the optional database drivers (npm ci --omit=optional).
  const driver = /Cannot find package '(better-sqlite3|pg)'/.exec(error.message)?.[1];
  if (code === 'ERR_MODULE_NOT_FOUND' && driver !== undefined) {
    return `the database driver ${driver} is not installed (it is an optional dependency, left out on node hosts): run "npm ci" without --omit=optional on the portal host`;
  }
  // A file or folder of another user (a command run without "sudo -u vpn-portal"): which, and whose.
  const file = (error as NodeJS.ErrnoException).path;
  if ((code === 'EACCES' || code === 'EPERM') && typeof syscall === 'string' && typeof file === 'string') {
    const reason = code === 'EACCES' ? 'permission denied' : 'operation not permitted';
    return `cannot ${syscall} ${file}: ${reason} (${code}); run vpn-portal as the user that owns it (the portal's user)`;
  }
  if (syscall === 'listen' && typeof code === 'string') {
    const where = address === undefined ? '' : ` ${address.includes(':') ? `[${address}]` : address}:${port ?? ''}`;
    return `cannot listen on${where}: ${LISTEN_PROBLEMS[code] ?? error.message} (${code})`;
  }
  return null;
}

/** Errors whose message is the whole story (their class names; no import, as above). */
const START_REFUSALS = new Set(['UnsafePermissions', 'DatabaseOpenFailed', 'MigrationFailed', 'MissingWebhookKey']);

const LISTEN_PROBLEMS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use by another program',
  EACCES: 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'this host has no such address',
};
