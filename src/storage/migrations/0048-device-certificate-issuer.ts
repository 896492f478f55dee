// `devices.certificate_issuer_fingerprint`: the SHA-256 (hex, of its DER) of the CA certificate
// that issued a device's certificate, as its chain showed at enrollment. A root's revocation list
// that revokes an intermediate CA names that CA by its issuer and serial only; the fingerprint
// tells which devices that very CA vouched for (a CA of the same name with another key did not).
// Null for devices bound before it was kept, and for those without a certificate.
import type { Kysely, Migration } from 'kysely';

export const deviceCertificateIssuer: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('devices').addColumn('certificate_issuer_fingerprint', 'text').execute();
  },
};
