// `vpn-portal node-reset N`: the administrator's confirmation that node N may be emptied by
// this database. The reconcile pass refuses to remove every peer of a node from a database
// that has never held a WireGuard configuration for it (a fresh or wrong database would cut
// every tunnel); this records that the administrator means it. Stored in the database, so
// every portal instance sees it.
import { ConfigError } from '../config/config-error.js';
import { formatAtom } from '../shared/time.js';
import { asNodeNumber } from '../shared/ids.js';
import { openDatabase } from '../storage/database.js';
import { confirmNodeReset } from '../storage/node-resets.js';
import { loadExistingPortalConfig } from './existing-portal.js';

export async function runNodeReset(
  nodeNumber: number,
  configPath: string | undefined,
  print: (line: string) => void,
): Promise<void> {
  const config = loadExistingPortalConfig(configPath);
  const node = asNodeNumber(nodeNumber);
  if (!config.nodes.has(node))
    throw new ConfigError(`node-reset: no profile of the configuration runs on node ${nodeNumber}`);
  const db = await openDatabase(config.database);
  try {
    await confirmNodeReset(db, node, formatAtom(new Date()));
  } finally {
    await db.destroy();
  }
  print(`node ${nodeNumber} may be emptied: the next reconcile pass removes every peer this database does not hold`);
}
