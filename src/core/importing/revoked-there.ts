// What eduVPN revoked after an earlier import brought it: a configuration that import brought,
// still valid here and by the expiry eduVPN gave it, that eduVPN no longer has (deleted there,
// or its user or authorization deleted with it; eduVPN drops a configuration only so, or once it
// expired). Brought again in a move after going back, or by a run while eduVPN still served,
// it would be a configuration eduVPN revoked that connects here: each is a conflict naming it,
// and the administrator revokes it here too before the import goes on.
import type { Db } from '../../storage/database.js';
import { importedConfigurationsHere } from '../../storage/imported-records.js';
import type { ImportFacts } from './configurations.js';
import type { ConflictList, KindCounts } from './plan-types.js';

/**
 * Adds a conflict for each configuration an import brought that is valid here and by its
 * eduVPN expiry but that eduVPN no longer has (`facts.nodeOfConnection` holds every
 * configuration eduVPN has, expired ones too, once the configurations were walked).
 */
export async function findRevokedInEduVpn(
  db: Db,
  facts: ImportFacts,
  conflicts: ConflictList,
  counts: { readonly wireGuardPeers: KindCounts; readonly certificates: KindCounts },
): Promise<void> {
  for await (const page of importedConfigurationsHere(db, facts.now)) {
    for (const note of page) {
      if (facts.nodeOfConnection.has(note.recordId)) continue;
      const kind = note.kind === 'wireguard' ? 'wireGuardPeers' : 'certificates';
      counts[kind].conflicting++;
      conflicts.add({
        kind,
        record: note.recordId,
        reason: `brought by an import at ${note.importedAt}, valid in eduVPN until ${note.expiresAt}, and no longer in eduVPN: revoked there since (deleted, or its user or authorization deleted); revoke it here too (delete_connection, or destroy its user), or it keeps connecting`,
      });
    }
  }
}
