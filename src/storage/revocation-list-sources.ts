// Queries on `revocation_list_sources` (migration 0047): per configured revocation list source,
// the newest list believed from it, with its CA and thisUpdate, kept across restarts: in force
// again at once, and a list served after a restart is held to the same CA and is no older.
import type { Db } from './database.js';

/** What was believed from one source: the newest list (DER), the CA it names and its thisUpdate. */
export interface RevocationListSourcePin {
  readonly issuer: string;
  readonly thisUpdate: Date;
  readonly list: Buffer;
}

/** The pins of every source that had a list believed, by location. */
export async function revocationListSourcePins(db: Db): Promise<Map<string, RevocationListSourcePin>> {
  const rows = await db.selectFrom('revocation_list_sources').selectAll().execute();
  return new Map(
    rows.map((row) => [
      row.location,
      { issuer: row.issuer, thisUpdate: new Date(row.this_update), list: Buffer.from(row.list, 'base64') },
    ]),
  );
}

/**
 * Notes a list believed from `location`, unless a newer one was noted (another portal instance
 * may have believed a newer list meanwhile). `overrulingOtherCas`: the configuration names the
 * source's CA, so a note of another CA's list is replaced whatever its date.
 */
export async function pinRevocationListSource(
  db: Db,
  location: string,
  pin: RevocationListSourcePin,
  overrulingOtherCas = false,
): Promise<void> {
  const row = { issuer: pin.issuer, this_update: pin.thisUpdate.toISOString(), list: pin.list.toString('base64') };
  await db
    .insertInto('revocation_list_sources')
    .values({ location, ...row })
    .onConflict((conflict) =>
      conflict
        .column('location')
        .doUpdateSet(row)
        .where((eb) =>
          eb.or([
            eb('revocation_list_sources.this_update', '<', row.this_update),
            ...(overrulingOtherCas ? [eb('revocation_list_sources.issuer', '<>', row.issuer)] : []),
          ]),
        ),
    )
    .execute();
}

/** Forgets what was believed from `location` (its CA changed); whether there was anything. */
export async function forgetRevocationListSource(db: Db, location: string): Promise<boolean> {
  const result = await db.deleteFrom('revocation_list_sources').where('location', '=', location).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
