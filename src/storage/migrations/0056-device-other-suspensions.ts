// A device may stand suspended for several reasons at once (src/core/devices/suspension.ts): the
// row shows one suspension (suspended_reason, suspended_at, suspended_by), and `other_suspensions`
// keeps the others that still stand (another check's reason, the reason an administrator took
// over), as a JSON array of { reason, since, by }, oldest first; null when there are none. A
// resume limited to a reason ends only that one, so a device suspended for two reasons stays
// suspended until both have ended.
import type { Kysely, Migration } from 'kysely';

export const deviceOtherSuspensions: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('devices').addColumn('other_suspensions', 'text').execute();
  },
};
