// `bash bench/devices.sh`: GET /devices (one page, the default 100 devices with their
// configurations, newest first) at 100,000 registered devices, on SQLite and on PostgreSQL
// (target: ≤ 100 ms p50). The devices are written straight into the database (the real schema,
// through the portal's own migrations), then the portal is started on it in this process and the
// Admin API is asked over HTTP: first pages and pages further on (by cursor), and with filters.
// BENCH_DATABASES="sqlite" (or "postgres") measures one; PostgreSQL needs TEST_POSTGRES_URL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseDatabaseLocation } from '../src/config/database-location.js';
import { newDeviceId } from '../src/core/devices/index.js';
import { PLATFORMS } from '../src/shared/platforms.js';
import { formatAtom } from '../src/shared/time.js';
import { openDatabase } from '../src/storage/database.js';
import { createTestDatabase, dropTestDatabase } from '../test/support/postgres.js';
import { startTestPortal } from '../test/support/test-portal.js';

const DEVICES = 100_000;
const BATCH = 500;
const SAMPLES = 50;
const TARGET_P50_MS = 100;

type Kind = 'sqlite' | 'postgres';

async function seed(database: string): Promise<void> {
  const location = parseDatabaseLocation(database, process.cwd());
  const db = await openDatabase(location);
  try {
    const start = Date.now() - DEVICES * 1000;
    for (let first = 0; first < DEVICES; first += BATCH) {
      const at = (index: number) => new Date(start + index * 1000);
      const indexes = Array.from({ length: Math.min(BATCH, DEVICES - first) }, (_, offset) => first + offset);
      await db
        .insertInto('users')
        .values(
          indexes
            .filter((index) => index % 2 === 0)
            .map((index) => ({
              user_id: `user${index}`,
              created_at: formatAtom(at(index)),
              last_seen: formatAtom(at(index)),
            })),
        )
        .execute();
      await db
        .insertInto('devices')
        .values(
          indexes.map((index) => ({
            device_id: newDeviceId(at(index)),
            user_id: `user${index - (index % 2)}`,
            profile_id: 'employees',
            platform: PLATFORMS[index % PLATFORMS.length] ?? 'other',
            serial: `SER-${index}`,
            mdm_id: `mdm-${index}`,
            identity: 'token',
            certificate_subject: null,
            certificate_issuer: null,
            certificate_serial: null,
            certificate_not_after: null,
            state: index % 10 === 0 ? 'retired' : 'registered',
            created_at: formatAtom(at(index)),
            retired_at: null,
            last_seen_at: null,
          })),
        )
        .execute();
    }
  } finally {
    await db.destroy();
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

async function measure(kind: Kind): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-devices-'));
  let database = `sqlite:${path.join(work, 'db.sqlite')}`;
  let drop = async () => {};
  if (kind === 'postgres') {
    const server = process.env['TEST_POSTGRES_URL'];
    if (server === undefined || server === '')
      throw new Error('the PostgreSQL figures need TEST_POSTGRES_URL (bench/devices.sh starts a server)');
    const created = await createTestDatabase(server);
    database = created.url;
    drop = () => dropTestDatabase(server, created.name);
  }
  try {
    const seeding = Date.now();
    await seed(database);
    console.log(`${kind}: ${DEVICES} devices written in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
    const portal = await startTestPortal({ database });
    try {
      const cases: [string, Record<string, string>][] = [
        ['first page', {}],
        ['filter platform=ios', { platform: 'ios' }],
        ['filter user_id', { user_id: 'user5000' }],
        ['filter state=retired', { state: 'retired' }],
      ];
      // A cursor half-way down: the page after it.
      const middle =
        (await portal.admin.devices({ limit: 1, serial: `SER-${DEVICES / 2}` })).devices[0]?.device_id ?? '';
      cases.push(['page at cursor (half-way)', { cursor: middle }]);
      for (const [name, query] of cases) {
        for (let warm = 0; warm < 3; warm++) await portal.get('/devices', query);
        const times: number[] = [];
        for (let sample = 0; sample < SAMPLES; sample++) {
          const started = process.hrtime.bigint();
          const answer = await portal.get('/devices', query);
          times.push(Number(process.hrtime.bigint() - started) / 1e6);
          if (answer.status !== 200)
            throw new Error(`GET /devices ${JSON.stringify(query)}: ${answer.status} ${answer.text}`);
        }
        times.sort((a, b) => a - b);
        const p50 = percentile(times, 50);
        console.log(
          `${kind}: GET /devices ${name}: p50 ${p50.toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms (target p50 ≤ ${TARGET_P50_MS} ms${p50 <= TARGET_P50_MS ? ', met' : ', MISSED'})`,
        );
      }
    } finally {
      await portal.close();
    }
  } finally {
    await drop();
    rmSync(work, { recursive: true, force: true });
  }
}

const kinds = (process.env['BENCH_DATABASES'] ?? 'sqlite postgres').split(/\s+/).filter(Boolean) as Kind[];
for (const kind of kinds) await measure(kind);
