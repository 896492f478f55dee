// NAT mapping history recorded before a node's date was held to the portal's clock may hold a
// change dated in the future (or past year 9999, stored as text that does not even sort as time):
// until then it stayed the node's last mapping, every later change was dated after it, and
// attribution read the mapping before all of them. Each node's changes are moved back to dates
// the portal can vouch for: none later than when it was recorded or than now, each a second
// after the one before (src/storage/nat-dates.ts).
import { sql, type Kysely, type Migration } from 'kysely';
import { formatAtom } from '../../shared/time.js';
import { settledNatDates } from '../nat-dates.js';

interface Row {
  readonly node_number: number;
  readonly applied_at: string;
  readonly recorded_at: string;
}

export const natDatesSettled: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const now = formatAtom(new Date());
    const { rows } = await sql<Row>`SELECT node_number, applied_at, recorded_at FROM nat_mappings`.execute(db);
    const byNode = new Map<number, Row[]>();
    for (const row of rows) byNode.set(row.node_number, [...(byNode.get(row.node_number) ?? []), row]);
    for (const [nodeNumber, history] of byNode) {
      // In the order of time, which the text of a date past year 9999 does not keep.
      const ordered = [...history].sort(
        (a, b) => Date.parse(a.applied_at) - Date.parse(b.applied_at) || a.recorded_at.localeCompare(b.recorded_at),
      );
      const settled = settledNatDates(
        ordered.map((row) => ({ appliedAt: row.applied_at, recordedAt: row.recorded_at })),
        now,
      );
      // Oldest first: each date only moves back, and stays after the one before, so no two rows meet.
      for (const [index, row] of ordered.entries()) {
        const appliedAt = settled[index];
        if (appliedAt === undefined || appliedAt === row.applied_at) continue;
        await sql`UPDATE nat_mappings SET applied_at = ${appliedAt}
          WHERE node_number = ${nodeNumber} AND applied_at = ${row.applied_at}`.execute(db);
      }
    }
  },
};
