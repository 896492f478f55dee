// The data directory and the SQLite files hold user ids, public keys and client addresses:
// only the portal's user may read them. The data directory is made 0700 and the files 0600,
// also when an older version (or an administrator's mkdir) left them open to everyone; what the
// portal cannot tighten stops the start with a message saying what to do.
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

const PRIVATE_DIRECTORY = 0o700;
const PRIVATE_FILE = 0o600;
/** Permission bits for the group and everyone else. */
const OTHERS = 0o077;
const STICKY = 0o1000;

/** A folder or file is open to other users and the portal cannot change that. */
export class UnsafePermissions extends Error {
  override readonly name = 'UnsafePermissions';
}

/**
 * Creates `dir` (and missing parents) as 0700, or makes an existing one 0700. A folder with the
 * sticky bit (/tmp) is shared by design: it is refused, never changed.
 */
export function ensurePrivateDirectory(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY });
  if ((statSync(dir).mode & STICKY) !== 0) {
    throw new UnsafePermissions(
      `folder ${dir} is shared with other users (sticky bit): give the portal a folder of its own`,
    );
  }
  tighten(dir, PRIVATE_DIRECTORY, 'folder', 'chmod 700');
}

/** Makes `file` 0600; a missing file is created empty with 0600 when `create`, else left missing. */
export function ensurePrivateFile(file: string, { create }: { readonly create: boolean }): void {
  if (create) createPrivateFile(file);
  tighten(file, PRIVATE_FILE, 'file', 'chmod 600');
}

/** Creates `file` empty with 0600 when it is missing; an existing file is left as it is. */
export function createPrivateFile(file: string): void {
  try {
    // 'wx' never truncates: an existing file (also one made meanwhile by another process) is kept.
    closeSync(openSync(file, 'wx', PRIVATE_FILE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

function tighten(target: string, mode: number, kind: 'folder' | 'file', command: string): void {
  let current: number;
  try {
    current = statSync(target).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((current & OTHERS) === 0) return;
  try {
    chmodSync(target, current & ~OTHERS & mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new UnsafePermissions(
      `${kind} ${target} is open to other users (mode ${current.toString(8).padStart(4, '0')}) and the portal cannot change that (${code}): ` +
        `run "${command} ${target}" as its owner, or give it to the portal's user with chown`,
    );
  }
}
