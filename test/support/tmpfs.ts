// A small real filesystem for one test (tests run as root): a tmpfs of a given size, mounted on
// a fresh folder, that the test can fill up to the last byte and free again. Always unmounted:
// by unmount(), and, should the test process die first, when it exits.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface Tmpfs {
  readonly dir: string;
  /** Writes a file until the filesystem has no byte left. */
  fill(): void;
  /** Deletes what fill() wrote. */
  free(): void;
  /** Unmounts (lazily if a file is still open) and removes the mount point; again: nothing. */
  unmount(): void;
}

const mounted = new Set<string>();
let exitHookAdded = false;

export function mountTmpfs(sizeBytes: number): Tmpfs {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0755`, 'tmpfs', dir]);
  mounted.add(dir);
  if (!exitHookAdded) {
    exitHookAdded = true;
    process.on('exit', () => {
      for (const each of mounted) unmountQuietly(each);
    });
  }
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      try {
        // Big blocks first, then single bytes, so the last page is used up too.
        for (const size of [64 * 1024, 4096, 1]) {
          const block = Buffer.alloc(size, 0x55);
          for (;;) {
            try {
              writeSync(fd, block);
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw error;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      if (!mounted.delete(dir)) return;
      unmountQuietly(dir);
    },
  };
}

function unmountQuietly(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' });
  } catch {
    // Still busy (a file open in a process that has not exited yet): detach it now, the kernel
    // frees it when the last file closes.
    execFileSync('umount', ['--lazy', dir], { stdio: 'ignore' });
  }
  rmSync(dir, { recursive: true, force: true });
}
