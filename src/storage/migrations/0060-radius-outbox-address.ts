// RADIUS accounting records keep the tunnel address they report (`radius_outbox.address`): a
// record waits while an earlier one of the same address waits for its server, so a firewall
// mapping addresses to users (FortiGate RSSO) never hears the next session's Start on an address
// before the Stop (or a late Interim-Update) of the session that had it before. Records queued
// before this migration get their address from the record itself. Two indexes serve the waits:
// by session and by address, each per server and in the order records were made.
import { sql, type Kysely, type Migration } from 'kysely';

export const radiusOutboxAddress: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('radius_outbox').addColumn('address', 'text').execute();
    const rows = await sql<{ record_id: string; record: string }>`SELECT record_id, record FROM radius_outbox`.execute(
      db,
    );
    for (const row of rows.rows) {
      const address = reportedAddress(row.record);
      if (address !== null)
        await sql`UPDATE radius_outbox SET address = ${address} WHERE record_id = ${row.record_id}`.execute(db);
    }
    await db.schema
      .createIndex('radius_outbox_session')
      .on('radius_outbox')
      .columns(['server', 'acct_session_id', 'record_id'])
      .execute();
    await db.schema
      .createIndex('radius_outbox_address')
      .on('radius_outbox')
      .columns(['server', 'address', 'record_id'])
      .execute();
  },
};

/** The record's Framed-IP-Address, else its Framed-IPv6-Address, as the record (JSON) of the time has them. */
function reportedAddress(record: string): string | null {
  try {
    const parsed: unknown = JSON.parse(record);
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { framedIpAddress, framedIpv6Address } = parsed as Record<string, unknown>;
    if (typeof framedIpAddress === 'string') return framedIpAddress;
    return typeof framedIpv6Address === 'string' ? framedIpv6Address : null;
  } catch {
    return null;
  }
}
