// An index of the sessions by node and start: the daily housekeeping keeps a node's old NAT
// mapping while a session of that node that overlaps its time is still kept, and asks so of each
// mapping a later one replaced (src/storage/nat-mappings.ts). Without it the question walks the
// history of every node; with the end in it too, the index alone answers.
import type { Kysely, Migration } from 'kysely';

export const sessionsByNodeStart: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('connection_log_node_started')
      .on('connection_log')
      .columns(['node_number', 'connected_at', 'disconnected_at'])
      .execute();
  },
};
