// The history's client addresses written IPv4-mapped (`::ffff:192.0.2.7`, from a WireGuard over
// TCP relay listening on `::`) before the portal wrote them as IPv4 are rewritten once as their
// IPv4 address, the one an abuse report names and a search by address looks for; the rewrite is
// the very function the history's writer applies now.
import { sql, type Kysely, type Migration } from 'kysely';
import { clientAddressOrSame } from '../../net/cidr.js';

/** Rows read per round, so a large history is not held in memory at once. */
const BATCH = 5000;

export const unmappedClientAddresses: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    let after = '';
    for (;;) {
      const { rows } = await sql<{ log_id: string; originating_ip: string }>`
        SELECT log_id, originating_ip FROM connection_log
        WHERE log_id > ${after} AND originating_ip LIKE '::ffff:%'
        ORDER BY log_id LIMIT ${BATCH}`.execute(db);
      for (const row of rows) {
        const unmapped = clientAddressOrSame(row.originating_ip);
        if (unmapped === row.originating_ip) continue;
        await sql`UPDATE connection_log SET originating_ip = ${unmapped} WHERE log_id = ${row.log_id}`.execute(db);
      }
      const last = rows.at(-1);
      if (last === undefined || rows.length < BATCH) break;
      after = last.log_id;
    }
  },
};
