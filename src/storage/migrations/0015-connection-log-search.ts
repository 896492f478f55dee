// The connection log searched by address and moment ("who had 10.10.3.7 at 14:02?"):
// an index per address column, each with the start time, so `ip` + `at` reads only the rows of
// that address. Addresses are compared in their canonical text (RFC 5952 for IPv6), which
// openConnection writes from now on; rows written before are rewritten here once.
// Numbered 0015: the number this work was given.
import { sql, type Kysely, type Migration } from 'kysely';
import { canonicalAddressOrSame } from '../../net/cidr.js';

/** Rows read per round while rewriting addresses, so a large history is not held in memory at once. */
const BATCH = 5000;

export const connectionLogSearchSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const column of ['ip_four', 'ip_six', 'originating_ip']) {
      await db.schema
        .createIndex(`connection_log_${column}`)
        .on('connection_log')
        .columns([column, 'connected_at'])
        .execute();
    }
    let after = '';
    for (;;) {
      const { rows } = await sql<{ log_id: string; ip_four: string; ip_six: string; originating_ip: string | null }>`
        SELECT log_id, ip_four, ip_six, originating_ip FROM connection_log WHERE log_id > ${after} ORDER BY log_id LIMIT ${BATCH}`.execute(
        db,
      );
      for (const row of rows) {
        const ipFour = canonicalAddressOrSame(row.ip_four);
        const ipSix = canonicalAddressOrSame(row.ip_six);
        const originatingIp = row.originating_ip === null ? null : canonicalAddressOrSame(row.originating_ip);
        if (ipFour === row.ip_four && ipSix === row.ip_six && originatingIp === row.originating_ip) continue;
        await sql`UPDATE connection_log SET ip_four = ${ipFour}, ip_six = ${ipSix}, originating_ip = ${originatingIp} WHERE log_id = ${row.log_id}`.execute(
          db,
        );
      }
      const last = rows.at(-1);
      if (last === undefined || rows.length < BATCH) break;
      after = last.log_id;
    }
  },
};
