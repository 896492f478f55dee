// The removals of the last ten minutes, kept on disk so that the rule of revisions.ts holds
// across a restart of the agent: a removal is on disk (synced) before the agent answers it, and a
// restarted agent reads the removals back before it takes any instruction. Without this a late
// add from before a disable (a portal instance stalled mid-request) would find a restarted agent
// that forgot the removal, and put the revoked peer back until the next reconcile pass.
//
// One JSON line per removal, appended; removals asked for while a write runs go together into the
// next one (a bulk disable is a few writes, not one per peer). The file is written anew with only
// the removals still remembered when it has grown to twice their number, and at start.
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { REMOVAL_MEMORY_MS } from '../../protocol/vpn-daemon.js';
import type { RememberedRemoval } from './revisions.js';

const lineSchema = z.object({
  publicKey: z.string().min(1).max(64),
  revision: z.number().int().nonnegative(),
  /**
   * Wall-clock milliseconds since the epoch when the removal was applied; written whole, read
   * also with a fraction (what a file written anew by an earlier version holds).
   */
  removedAt: z.number().nonnegative(),
});

/** What the file keeps: the memory of revisions.ts. */
export interface RememberedRemovals {
  removals(): readonly RememberedRemoval[];
  readonly removalCount: number;
}

/** The file is written anew once it holds this many lines and twice as many as are remembered. */
const REWRITE_FROM_LINES = 1_000;

export class RemovalFile {
  readonly #file: string;
  readonly #logger: Logger;
  /** The removals remembered now: what a rewrite keeps, and how many they are. */
  readonly #remembered: RememberedRemovals;
  readonly #wallMs: () => number;
  /** Lines waiting for the next write. */
  #pending: string[] = [];
  /** Lines the file holds. */
  #lines = 0;
  /**
   * A write failed: the file may end in part of a line (a disk that filled up midway), which an
   * append would join to the next removal and so lose it at the next start. The next write is a
   * whole new file instead.
   */
  #mayEndMidLine = false;
  /** Writes asked for, and how many of them are on disk. */
  #asked = 0;
  #done = 0;
  #running: Promise<void> | null = null;
  #writes = 0;

  constructor(file: string, logger: Logger, remembered: RememberedRemovals, wallMs: () => number = Date.now) {
    this.#file = file;
    this.#logger = logger;
    this.#remembered = remembered;
    this.#wallMs = wallMs;
  }

  /**
   * What the previous run remembered and is still within ten minutes; a missing file is none. A
   * file that cannot be read is logged as an error and taken for none: a node that does not start
   * would cut every tunnel, where the memory guards against a late add within minutes.
   */
  async load(): Promise<RememberedRemoval[]> {
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#logger.error(
          { file: this.#file, reason: (error as Error).message },
          'cannot read the removal memory file; the removals of the last ten minutes before this start are not known',
        );
      return [];
    }
    const now = this.#wallMs();
    const latest = new Map<string, RememberedRemoval>();
    let unreadable = 0;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const parsed = lineSchema.safeParse(safeJson(line));
      if (!parsed.success) {
        unreadable++;
        continue;
      }
      // A clock set back since: as if just removed, remembered the whole ten minutes.
      const agoMs = Math.max(0, now - parsed.data.removedAt);
      latest.set(parsed.data.publicKey, { publicKey: parsed.data.publicKey, revision: parsed.data.revision, agoMs });
    }
    // The last line of a write cut short by a crash is expected; it was never answered.
    if (unreadable > 0)
      this.#logger.warn({ file: this.#file, lines: unreadable }, 'lines of the removal memory file could not be read');
    return [...latest.values()].filter((removal) => removal.agoMs <= REMOVAL_MEMORY_MS);
  }

  /** Writes the file anew with the removals remembered now (at start, after load); a failure is logged. */
  async rewrite(): Promise<void> {
    try {
      await this.#write([], true);
    } catch (error) {
      this.#writeFailed(error);
    }
  }

  /** Writes made so far (appends and rewrites). */
  get writes(): number {
    return this.#writes;
  }

  /** Puts one removal on disk; resolves once it is there (or the write failed, which is logged). */
  async record(publicKey: string, revision: number): Promise<void> {
    this.#pending.push(JSON.stringify({ publicKey, revision, removedAt: this.#wallMs() }));
    const wanted = ++this.#asked;
    while (this.#done < wanted) {
      if (this.#running !== null) {
        await this.#running;
        continue;
      }
      const covers = this.#asked;
      const lines = this.#pending;
      this.#pending = [];
      const rewrite =
        this.#mayEndMidLine ||
        this.#lines + lines.length >= Math.max(REWRITE_FROM_LINES, 2 * this.#remembered.removalCount);
      this.#running = this.#write(lines, rewrite)
        .catch((error: unknown) => this.#writeFailed(error))
        .finally(() => {
          this.#done = Math.max(this.#done, covers);
          this.#running = null;
        });
    }
  }

  /** The removal stands on the interface; only its memory across a restart is missing. */
  #writeFailed(error: unknown): void {
    this.#mayEndMidLine = true;
    this.#logger.error(
      { file: this.#file, reason: (error as Error).message },
      'cannot write the removal memory file; a restart of the agent now forgets the latest removals',
    );
  }

  /** Appends `lines`, or (`rewrite`) writes aside only what is remembered now and renames. */
  async #write(lines: readonly string[], rewrite: boolean): Promise<void> {
    this.#writes++;
    await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
    if (rewrite) {
      const now = this.#wallMs();
      const kept = this.#remembered.removals().map((removal) =>
        JSON.stringify({
          publicKey: removal.publicKey,
          revision: removal.revision,
          // Whole milliseconds: `agoMs` is measured by the monotonic clock, with a fraction.
          removedAt: Math.floor(now - removal.agoMs),
        }),
      );
      const temporary = `${this.#file}.tmp`;
      await writeSynced(temporary, 'w', kept);
      await rename(temporary, this.#file);
      // The rename is the folder's change: synced too, so a power cut cannot undo it.
      await syncFolder(dirname(this.#file));
      this.#lines = kept.length;
      this.#mayEndMidLine = false;
      return;
    }
    await writeSynced(this.#file, 'a', lines);
    this.#lines += lines.length;
  }
}

async function writeSynced(file: string, flags: 'w' | 'a', lines: readonly string[]): Promise<void> {
  const handle = await open(file, flags, 0o600);
  try {
    if (lines.length > 0) await handle.writeFile(`${lines.join('\n')}\n`);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}
