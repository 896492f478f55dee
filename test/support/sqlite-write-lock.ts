// Another process holding a SQLite database's write lock (BEGIN IMMEDIATE), as a backup tool or
// a maintenance script would: the stories of a portal whose writes wait and then give up.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** better-sqlite3 is found from the repository's node_modules. */
const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));

/** Another process opens the database and takes its write lock until told to let go. */
export async function holdWriteLock(
  databaseFile: string,
): Promise<{ readonly child: ChildProcess; release(): Promise<void> }> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1]);
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    process.stdin.once('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script, databaseFile], {
    cwd: REPOSITORY,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  assert.equal(chunk.toString('utf8'), 'locked\n');
  return {
    child,
    async release() {
      const exited = once(child, 'exit');
      child.stdin?.write('release\n');
      await exited;
    },
  };
}
