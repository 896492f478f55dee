// Starting the portal: a start that fails half-way (a port already taken) stops every part it had
// started, so nothing is left running: no database file open, no server listening, no timer.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { startTestPortal } from './support/test-portal.js';
import { until } from './support/until.js';

async function takenPort(t: TestContext): Promise<number> {
  const blocker: Server = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  return (blocker.address() as AddressInfo).port;
}

function ownDataDir(t: TestContext): string {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-start-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/** The files under `dir` this process holds open (the SQLite database and its journal). */
function openFilesUnder(dir: string): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(dir) ? [target] : [];
    } catch {
      return [];
    }
  });
}

/** What keeps this process running: listening servers, sockets, timers. */
function runningResources(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((kind) => kind !== 'FSReqCallback')
    .sort();
}

/** Waits until nothing keeps this process running that did not before (a socket that failed to listen closes a moment later). */
async function backTo(before: readonly string[]): Promise<void> {
  const count = (kinds: readonly string[], kind: string) => kinds.filter((other) => other === kind).length;
  await until(`no more running resources than ${before.join(', ')}`, async () => {
    const now = runningResources();
    return now.every((kind) => count(now, kind) <= count(before, kind));
  });
}

test('a portal whose listen port is taken fails to start and leaves no database open and nothing running', async (t) => {
  const port = await takenPort(t);
  const dataDir = ownDataDir(t);
  const before = runningResources();
  await assert.rejects(
    startTestPortal({ dataDir, database: 'sqlite', config: { listen: { host: '127.0.0.1', port } } }),
    /EADDRINUSE/,
  );
  assert.deepEqual(openFilesUnder(dataDir), [], 'the database was closed');
  await backTo(before);
});

test('a portal whose metrics port is taken closes the HTTP server it had started, and the database', async (t) => {
  const port = await takenPort(t);
  const dataDir = ownDataDir(t);
  const before = runningResources();
  await assert.rejects(
    startTestPortal({ dataDir, database: 'sqlite', config: { metrics: { listen: `127.0.0.1:${port}` } } }),
    /EADDRINUSE/,
  );
  assert.deepEqual(openFilesUnder(dataDir), [], 'the database was closed');
  await backTo(before);
});
