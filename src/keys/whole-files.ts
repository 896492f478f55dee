// Key files appear whole or not at all: each is written to a temporary file beside it and then
// linked or renamed into place. Another portal instance never reads a half-written key, and a
// full disk or a crash mid-write leaves no empty or cut-off key file that a later start would
// take for a key (or refuse as "another key").
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A private temporary file next to `file` (so that link and rename stay on one file system) holding `content`. */
function writeTemporary(file: string, content: string): string {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(temporary, content, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // A full disk fails the write after the file was made: nothing of it stays.
    rmSync(temporary, { force: true });
    throw error;
  }
  return temporary;
}

/**
 * Creates `file` with `content` unless it exists (link(2) never replaces a file, also not one
 * another process made meanwhile); `content` is what the file holds afterwards, ours or theirs.
 */
export function createFileOnce(file: string, content: string): { readonly created: boolean; readonly content: string } {
  const temporary = writeTemporary(file, content);
  try {
    linkSync(temporary, file);
    return { created: true, content };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { created: false, content: readFileSync(file, 'utf8') };
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** Replaces `file` with `content` in one step (rename(2)): a reader sees the old file or the new one. */
export function replaceFileWhole(file: string, content: string): void {
  const temporary = writeTemporary(file, content);
  try {
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
