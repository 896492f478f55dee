// A device's history names the profile of each configuration issued to it (`device_history.
// profile_id`, on `enrolled` entries), so that a key limited to some profiles is shown the
// enrollments of its profiles only, as it is shown the device's configurations. Entries from
// before this migration have none: which profile they were of was not kept.
import type { Kysely, Migration } from 'kysely';

export const deviceHistoryProfile: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('device_history').addColumn('profile_id', 'text').execute();
  },
};
