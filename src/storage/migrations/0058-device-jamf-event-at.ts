// Jamf Pro may deliver two webhooks of one device the other way round (or an old one again): an
// old "joined the allowed group" after the "left" that followed it would resume a device that is
// outside the group. Each device keeps the time Jamf Pro gave the newest group event applied to
// it (`webhook.eventTimestamp`, as an ISO 8601 text with milliseconds, so that texts compare as
// times on both databases), and an older event changes nothing (src/core/devices/jamf-push.ts).
import type { Kysely, Migration } from 'kysely';

export const deviceJamfEventAt: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('devices').addColumn('jamf_event_at', 'text').execute();
  },
};
