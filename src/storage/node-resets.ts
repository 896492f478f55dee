// Queries on `node_resets`: nodes an administrator allowed to be emptied by a database that
// has never held a WireGuard configuration for them (`vpn-portal node-reset N`). Without that
// confirmation the reconcile pass leaves such a node alone: a fresh or wrong database must
// never silently remove every peer of a working node.
import type { NodeNumber } from '../shared/ids.js';
import type { Db } from './database.js';

export async function confirmNodeReset(db: Db, nodeNumber: NodeNumber, now: string): Promise<void> {
  await db
    .insertInto('node_resets')
    .values({ node_number: nodeNumber, confirmed_at: now })
    .onConflict((conflict) => conflict.column('node_number').doUpdateSet({ confirmed_at: now }))
    .execute();
}

export async function isNodeResetConfirmed(db: Db, nodeNumber: NodeNumber): Promise<boolean> {
  const row = await db
    .selectFrom('node_resets')
    .select('node_number')
    .where('node_number', '=', nodeNumber)
    .executeTakeFirst();
  return row !== undefined;
}
