// Indexes of the open sessions by node, one per protocol: every full pass asks, for each node,
// which of its WireGuard and of its OpenVPN sessions are still open (and whether it has any
// OpenVPN one), and the open sessions of all nodes are far more than one node's.
import { sql, type Kysely, type Migration } from 'kysely';

export const openSessionsByNode: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`CREATE INDEX connection_log_open_wireguard_node ON connection_log (node_number)
      WHERE disconnected_at IS NULL AND vpn_proto = 'wireguard'`.execute(db);
    await sql`CREATE INDEX connection_log_open_openvpn ON connection_log (node_number, connected_at)
      WHERE disconnected_at IS NULL AND vpn_proto = 'openvpn'`.execute(db);
  },
};
