// A reconcile pass reads each node's wanted peers: at a million configurations over fifty nodes
// that read joined every user and scanned every configuration, once per node. An index by node
// lets it read the node's own configurations; (node, profile) also holds all that the count of
// configurations per pool (/metrics) reads, so that count reads the index alone, and one index
// serves both (each index costs every create a B-tree update); the same index on certificates
// does it for OpenVPN's count. Two partial indexes hold the few rows that take a configuration
// off its node — disabled users, suspended devices — so checking a node's configurations
// against them reads those rows only, not every user or device.
import { sql, type Kysely, type Migration } from 'kysely';

export const wantedPeersIndexes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.createIndex('wg_peers_node').on('wg_peers').columns(['node_number', 'profile_id']).execute();
    await db.schema
      .createIndex('certificates_node')
      .on('certificates')
      .columns(['node_number', 'profile_id'])
      .execute();
    await db.schema
      .createIndex('users_disabled')
      .on('users')
      .column('user_id')
      .where(sql<boolean>`is_disabled = 1`)
      .execute();
    await db.schema
      .createIndex('devices_suspended')
      .on('devices')
      .column('device_id')
      .where(sql<boolean>`state = 'suspended'`)
      .execute();
  },
};
