// `users.disabled_by` = `(eduvpn import)` for a user the eduVPN import brought disabled: a later
// import brings such a user what eduVPN issued it (so that a run that stopped after the users
// continues), but nothing to a user disabled here. Users brought before: disabled, with no
// `disabled_by` (no disable here since migration 0036 set one), noted as brought by an import,
// and named by no disable_user receipt (no disable here before 0036 either, as far as the
// receipts, kept for auditLogRetention, tell).
import { sql, type Kysely, type Migration } from 'kysely';

export const usersDisabledByImport: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      UPDATE users SET disabled_by = '(eduvpn import)'
      WHERE is_disabled = 1 AND disabled_by IS NULL
        AND EXISTS (SELECT 1 FROM imported_records WHERE kind = 'user' AND record_id = users.user_id)
        AND NOT EXISTS (SELECT 1 FROM revocations WHERE reason = 'disable_user' AND revocations.user_id = users.user_id)
    `.execute(db);
  },
};
