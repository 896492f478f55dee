// A device is named by MDMs and the tools administrators copy from in either letter case (a UDID
// registered as `8a1B…`, named by Jamf Pro as `8A1B…`): a webhook that says a device left its
// allowed group must find it whatever the case, or it keeps its tunnels. These indexes of the
// live devices' serials and MDM ids, lower-cased, let that look-up read an index rather than
// every device (src/storage/devices.ts, findLiveDevicesAnyCase). Not unique: devices registered
// before whose identifiers differ only in case stay as they are (the look-up sees them all).
import { sql, type Kysely, type Migration } from 'kysely';

export const liveDeviceIdentifiersAnyCase: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const column of ['serial', 'mdm_id'] as const)
      await db.schema
        .createIndex(`devices_live_${column}_lower`)
        .on('devices')
        .expression(sql`lower(${sql.ref(column)})`)
        .where(sql.raw<boolean>(`state <> 'retired' and ${column} is not null`))
        .execute();
  },
};
