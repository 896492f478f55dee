// Indexes for the device searches of the Admin API's `devices` call and the console's Devices
// page: by serial, MDM id, state or platform, newest first. The unique indexes of 0014 hold live
// devices only, and a search also finds retired ones; without these a search walked every
// device from the newest until it filled its page.
import type { Kysely, Migration } from 'kysely';

export const deviceSearchIndexes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const column of ['serial', 'mdm_id', 'state', 'platform'])
      await db.schema.createIndex(`devices_by_${column}`).on('devices').columns([column, 'device_id']).execute();
  },
};
