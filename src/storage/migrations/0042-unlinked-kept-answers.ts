// Answers that hold a secret (Idempotency-Key), kept before migrations 0039 and 0041 linked each
// to what it handed out, are dropped: nothing says whether their configuration, admin key,
// webhook secret or enrollment token has been revoked since, so given again they could hand out
// a revoked secret for up to 24 hours after the upgrade. Their records stay, `not-kept`: a retry
// with the key answers 410 saying so (src/http/admin-api/idempotency.ts) and makes nothing.
import { sql, type Kysely, type Migration } from 'kysely';

/** The calls whose kept answers hand out what can be taken back, as they were named then. */
const HANDING_OUT = ['create', 'create_admin_key', 'create_webhook', 'rotate_webhook_secret', 'enrollment_token'];

export const unlinkedKeptAnswers: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`UPDATE idempotency_records SET state = 'not-kept', answer = NULL
      WHERE state = 'done' AND handed_out_kind IS NULL AND call IN (${sql.join(HANDING_OUT)})`.execute(db);
  },
};
