// `node --import tsx bench/eduvpn-import.ts`: the eduVPN import of 100,000 configurations (half
// WireGuard, half OpenVPN, 50,000 users, every tenth disabled, a connection log entry each),
// from an eduVPN SQLite database the test fixture writes as eduVPN lays it out, into a fresh
// portal: the dry run's seconds, then the import's (target: under a minute), then a second run
// (nothing to do). BENCH_DATABASES="sqlite" (default) or "postgres" (needs TEST_POSTGRES_URL)
// for the portal's database; BENCH_CONFIGURATIONS for another size.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { resolvePortalConfig } from '../src/config/load.js';
import { PortalEvents } from '../src/core/events.js';
import {
  importEduVpn,
  planEduVpnImport,
  type ImportContext,
  type ImportProgress,
} from '../src/core/importing/index.js';
import { readEduVpnDeployment } from '../src/eduvpn/read-deployment.js';
import { KeyStore } from '../src/keys/key-store.js';
import { writeAuditLog } from '../src/listeners/audit-log.js';
import { OpenVpnKeys } from '../src/openvpn/openvpn-keys.js';
import { systemClock } from '../src/shared/time.js';
import { openDatabase } from '../src/storage/database.js';
import { writeEduVpnDeployment } from '../test/support/eduvpn-deployment.js';
import { createTestDatabase, dropTestDatabase } from '../test/support/postgres.js';

const CONFIGURATIONS = Number(process.env['BENCH_CONFIGURATIONS'] ?? 100_000);
const TARGET_SECONDS = 60;
const RANGES = {
  wRangeFour: '10.128.0.0/16',
  wRangeSix: 'fd80::/64',
  oRangeFour: '10.129.0.0/16',
  oRangeSix: 'fd81::/64',
};

/** Seconds each kind took, per phase, from the import's progress: where the time goes. */
function kindTimer(): { progress: ImportProgress; report: () => string } {
  const times: string[] = [];
  let since = performance.now();
  const progress: ImportProgress = ({ phase, kind, done, total }) => {
    if (done < total) return;
    const now = performance.now();
    times.push(`${phase} ${kind} ${((now - since) / 1000).toFixed(1)} s`);
    since = now;
  };
  return { progress, report: () => times.splice(0).join(', ') };
}

/** Wall seconds, and this process's CPU seconds (SQLite runs in it): the figure a busy machine distorts least. */
async function seconds<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; cpu: string }> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const value = await work();
  const cpu = process.cpuUsage(cpuBefore);
  return {
    value,
    seconds: (performance.now() - started) / 1000,
    cpu: `${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU`,
  };
}

async function measure(kind: 'sqlite' | 'postgres', dir: string): Promise<void> {
  const written = await seconds(() =>
    writeEduVpnDeployment(path.join(dir, `eduvpn-${kind}`), {
      profiles: [{ profileId: 'office', nodes: [{ nodeNumber: 0, hostName: 'vpn.example.org', ...RANGES }] }],
      users: [],
      generated: {
        users: CONFIGURATIONS / 2,
        configurationsPerUser: 2,
        profileId: 'office',
        protocol: 'both',
        disabledEvery: 10,
      },
      statisticsDays: 30,
    }),
  );
  console.log(
    `${kind}: eduVPN deployment of ${CONFIGURATIONS} configurations written in ${written.seconds.toFixed(1)} s`,
  );
  const server = process.env['TEST_POSTGRES_URL'];
  const portalDatabase = kind === 'postgres' && server !== undefined ? await createTestDatabase(server) : null;
  const dataDir = path.join(dir, `portal-${kind}`);
  const config = resolvePortalConfig(
    {
      baseUrl: 'https://vpn.example.org/vpn-user-portal/',
      dataDir,
      database: portalDatabase?.url ?? `sqlite:${path.join(dataDir, 'portal.sqlite')}`,
      ProfileList: [
        {
          profileId: 'office',
          displayName: 'Office',
          hostName: 'vpn.example.org',
          nodeUrl: 'http://127.0.0.1:2',
          ...RANGES,
        },
      ],
    },
    'bench configuration',
  );
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  const deployment = await readEduVpnDeployment(written.value.location);
  try {
    const events = new PortalEvents(pino({ level: 'warn' }));
    writeAuditLog(events);
    const ctx: ImportContext = {
      config,
      db,
      keys: new KeyStore(config.keyDir),
      openVpnKeys: new OpenVpnKeys(config.keyDir),
      events,
      clock: systemClock,
    };
    const timer = kindTimer();
    const plan = await seconds(() => planEduVpnImport(ctx, deployment, timer.progress));
    console.log(
      `${kind}: dry run ${plan.seconds.toFixed(1)} s, ${plan.cpu} (${plan.value.conflictCount} conflicts): ${timer.report()}`,
    );
    const run = await seconds(() => importEduVpn(ctx, deployment, timer.progress));
    const inserted = run.value.applied?.inserted;
    console.log(
      `${kind}: import ${run.seconds.toFixed(1)} s, ${run.cpu} (target < ${TARGET_SECONDS} s): ${timer.report()}; for ${inserted?.wireGuardPeers ?? 0} WireGuard and ${inserted?.certificates ?? 0} OpenVPN configurations, ${inserted?.users ?? 0} users, ${inserted?.connectionLog ?? 0} log entries`,
    );
    const again = await seconds(() => importEduVpn(ctx, deployment));
    console.log(
      `${kind}: second run ${again.seconds.toFixed(1)} s, brought ${Object.values(again.value.applied?.inserted ?? {}).reduce((sum, count) => sum + count, 0)}`,
    );
  } finally {
    await deployment.close();
    await db.destroy();
    if (portalDatabase !== null && server !== undefined) await dropTestDatabase(server, portalDatabase.name);
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'bench-eduvpn-import-'));
try {
  for (const kind of (process.env['BENCH_DATABASES'] ?? 'sqlite').split(/[ ,]+/)) {
    if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`BENCH_DATABASES: unknown database ${kind}`);
    await measure(kind, dir);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
