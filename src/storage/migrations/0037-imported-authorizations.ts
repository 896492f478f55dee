// The eduVPN import notes the OAuth authorizations it brings in `imported_records` (kind
// `authorization`), so that a later run leaves one deleted here since. Nothing but the import
// creates authorizations here, so every one here now was brought by an earlier run: each is
// noted, from when its user was noted (else now), until the latest of its own expiry and those
// of the configurations here naming it (until then eduVPN's copy could be brought again).
import { sql, type Kysely, type Migration } from 'kysely';
import { formatAtom } from '../../shared/time.js';

export const importedAuthorizations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const now = formatAtom(new Date());
    // `WHERE true`: SQLite reads ON CONFLICT after a bare SELECT … FROM as a join's constraint.
    await sql`
      INSERT INTO imported_records (kind, record_id, imported_at, expires_at)
      SELECT 'authorization', a.auth_key,
        COALESCE(
          (SELECT u.imported_at FROM imported_records u WHERE u.kind = 'user' AND u.record_id = a.user_id),
          ${now}
        ),
        CASE WHEN COALESCE(n.latest, '') > a.expires_at THEN n.latest ELSE a.expires_at END
      FROM oauth_authorizations a
      LEFT JOIN (
        SELECT c.auth_key, MAX(c.expires_at) AS latest FROM (
          SELECT auth_key, expires_at FROM wg_peers WHERE auth_key IS NOT NULL
          UNION ALL
          SELECT auth_key, expires_at FROM certificates WHERE auth_key IS NOT NULL
        ) c GROUP BY c.auth_key
      ) n ON n.auth_key = a.auth_key
      WHERE true
      ON CONFLICT (kind, record_id) DO NOTHING
    `.execute(db);
  },
};
