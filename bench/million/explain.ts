// The million-configuration benchmark's plan check: while it is on, PostgreSQL's auto_explain
// writes the plan of every statement the portal sends (with the portal's own parameters) to
// the server's log; afterwards every plan is read back and each sequential scan of a table
// larger than SEQ_SCAN_ROWS rows is reported, with the statement that made it, and the
// durations of a few statements the bench names (a node's wanted peers, the /metrics counts).
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/** A sequential scan of a table this size or smaller is fine: an index would not help. */
export const SEQ_SCAN_ROWS = 5000;

export interface SeqScan {
  /** When the server logged the plan (ms since the epoch). */
  readonly at: number;
  readonly table: string;
  readonly rows: number;
  readonly statement: string;
}

export interface PlanCheck {
  readonly plans: number;
  readonly seqScans: readonly SeqScan[];
  /** Each named statement's durations as the server logged them (ms), by name. */
  readonly durations: ReadonlyMap<string, readonly number[]>;
}

/**
 * Statements the bench times and always holds to the check, whoever sent them and when: each
 * node's wanted peers, read by every reconcile pass (src/storage/wg-peers.ts peersWantedOnNode),
 * and the count of configurations per pool that /metrics reports.
 */
export const NAMED_STATEMENTS: Readonly<Record<string, RegExp>> = {
  "a node's wanted peers": /"wg_peers"\."ip_six" from "wg_peers" .*"wg_peers"\."node_number" = \$\d+/is,
  'configurations per pool (/metrics)':
    /from "wg_peers" group by "(?:profile_id", "node_number|node_number", "profile_id)"/is,
};

/** The name of the statement `text` is, among NAMED_STATEMENTS; undefined: none. */
export function statementName(text: string): string | undefined {
  return Object.entries(NAMED_STATEMENTS).find(([, pattern]) => pattern.test(text))?.[0];
}

/** The server's log: bench/run.sh's throw-away server writes it beside its socket. */
export function serverLogPath(): string {
  const dir = process.env['TEST_POSTGRES_SOCKET_DIR'];
  if (dir === undefined || dir === '')
    throw new Error(
      'the plan check reads the throw-away server’s log: run it through bench/run.sh (TEST_POSTGRES_SOCKET_DIR)',
    );
  return path.join(dir, 'server.log');
}

/** Plans of every statement on new connections to `url`'s database from now on. */
export async function startExplaining(url: string): Promise<number> {
  await settings(url, [
    "session_preload_libraries = 'auto_explain'",
    'auto_explain.log_min_duration = 0',
    "auto_explain.log_format = 'json'",
  ]);
  return statSync(serverLogPath()).size;
}

export async function stopExplaining(url: string): Promise<void> {
  await settings(url, [
    'session_preload_libraries = DEFAULT',
    'auto_explain.log_min_duration = DEFAULT',
    'auto_explain.log_format = DEFAULT',
  ]);
}

async function settings(url: string, assignments: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const database = (await client.query<{ name: string }>('SELECT current_database() AS name')).rows[0]?.name ?? '';
    for (const assignment of assignments) {
      const [name, value] = assignment.split(' = ') as [string, string];
      await client.query(
        value === 'DEFAULT'
          ? `ALTER DATABASE "${database}" RESET ${name}`
          : `ALTER DATABASE "${database}" SET ${name} = ${value}`,
      );
    }
  } finally {
    await client.end();
  }
}

/** Reads the plans logged since `fromOffset` and the sizes of the tables they scan. */
export async function checkPlans(url: string, fromOffset: number): Promise<PlanCheck> {
  const logPath = serverLogPath();
  const size = statSync(logPath).size - fromOffset;
  const buffer = Buffer.alloc(size);
  const descriptor = openSync(logPath, 'r');
  try {
    readSync(descriptor, buffer, 0, size, fromOffset);
  } finally {
    closeSync(descriptor);
  }
  // An entry starts with a time stamp (the default log_line_prefix); a plan's lines follow it.
  const entries = buffer.toString('utf8').split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const sizes = new Map(
      (
        await client.query<{ relname: string; rows: number }>(
          "SELECT relname, reltuples::bigint AS rows FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace",
        )
      ).rows.map((row) => [row.relname, Number(row.rows)]),
    );
    const seqScans = new Map<string, SeqScan>();
    const durations = new Map<string, number[]>();
    let plans = 0;
    for (const entry of entries) {
      const at = entry.indexOf('plan:');
      const duration = /duration: ([\d.]+) ms/.exec(entry);
      if (duration === null || at < 0) continue;
      const plan = JSON.parse(entry.slice(at + 'plan:'.length)) as { 'Query Text': string; Plan: PlanNode };
      plans++;
      const name = statementName(plan['Query Text']);
      if (name !== undefined) {
        const times = durations.get(name) ?? [];
        times.push(Number(duration[1]));
        durations.set(name, times);
      }
      for (const table of seqScannedTables(plan.Plan)) {
        const rows = sizes.get(table) ?? 0;
        if (rows <= SEQ_SCAN_ROWS) continue;
        const statement = plan['Query Text'].replace(/\s+/g, ' ').trim();
        const stamp = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) UTC/.exec(entry);
        const at = stamp === null ? Number.NaN : Date.parse(`${stamp[1]}T${stamp[2]}Z`);
        if (!seqScans.has(`${table} ${statement}`))
          seqScans.set(`${table} ${statement}`, { at, table, rows, statement });
      }
    }
    return { plans, seqScans: [...seqScans.values()], durations };
  } finally {
    await client.end();
  }
}

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly Plans?: readonly PlanNode[];
}

function seqScannedTables(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] !== undefined ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScannedTables)];
}
