// Indexes of the live devices bound to a certificate, for reading a device CA's revocation list:
// which of them hold one of the revoked serials (a refresh of a large list asks hundreds of
// times, some 250 serials each), and which a revoked CA issued, by the CA certificate's
// fingerprint or, for devices bound before the fingerprint was kept (0048), by its name with no
// fingerprint. Without them each question walked every device. Partial, as the questions are:
// retired devices and those without a certificate are never asked for.
import { sql, type Kysely, type Migration } from 'kysely';

export const liveDeviceCertificates: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('devices_live_certificate_serial')
      .on('devices')
      .column('certificate_serial')
      .where(sql<boolean>`identity = 'certificate' AND state <> 'retired'`)
      .execute();
    await db.schema
      .createIndex('devices_live_certificate_issuer')
      .on('devices')
      .columns(['certificate_issuer_fingerprint', 'certificate_issuer'])
      .where(sql<boolean>`identity = 'certificate' AND state <> 'retired'`)
      .execute();
  },
};
