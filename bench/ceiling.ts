// The physical ceiling of a create on this machine, measured in one process in the same run
// as the figures it is compared with (these shared machines vary ±15 % from run to run): one
// WireGuard key pair as the portal makes it, plus one insert of a configuration row in its
// own SQLite transaction (WAL, synchronous=NORMAL, the portal's settings).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { generateWireGuardKeyPair } from '../src/wireguard/keys.js';
import { round } from './process-figures.js';

export interface Ceiling {
  /** Microseconds per key pair. */
  readonly keyPairUs: number;
  /** Microseconds per insert in its own transaction. */
  readonly insertUs: number;
  /** Their sum: the least CPU a create can cost. */
  readonly createUs: number;
}

const ROUNDS = 20_000;

export function measureCeiling(): Ceiling {
  for (let round = 0; round < 2_000; round++) generateWireGuardKeyPair();
  let started = process.hrtime.bigint();
  const keys: string[] = [];
  for (let round = 0; round < ROUNDS; round++) keys.push(generateWireGuardKeyPair().publicKey);
  const keyPairUs = Number(process.hrtime.bigint() - started) / 1000 / ROUNDS;

  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-ceiling-'));
  try {
    const db = new SqliteDatabase(path.join(directory, 'ceiling.sqlite'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(`CREATE TABLE peers (public_key TEXT PRIMARY KEY, user_id TEXT NOT NULL, profile_id TEXT NOT NULL, ip_four TEXT NOT NULL UNIQUE,
      ip_six TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, expires_at TEXT NOT NULL)`);
    const insert = db.prepare('INSERT INTO peers VALUES (?, ?, ?, ?, ?, ?, ?)');
    const insertOne = db.transaction((index: number, key: string) => {
      insert.run(
        key,
        `user${index % 5000}`,
        'bench',
        `10.${index >> 16}.${(index >> 8) & 255}.${index & 255}`,
        `fd00::${index.toString(16)}`,
        'now',
        'later',
      );
    });
    started = process.hrtime.bigint();
    for (const [index, key] of keys.entries()) insertOne(index, key);
    const insertUs = Number(process.hrtime.bigint() - started) / 1000 / ROUNDS;
    db.close();
    return { keyPairUs: round(keyPairUs), insertUs: round(insertUs), createUs: round(keyPairUs + insertUs) };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
