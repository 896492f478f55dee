// Queries on `certificate_authorities` (intermediate CAs seen in enrolled chains, whose keys
// verify the revocation lists that name them) and `revocation_list_holds` (lists held until an
// administrator confirms them with `vpn-portal mdm confirm-crl`).
import type { Db } from './database.js';

/** An intermediate CA as stored: its SHA-256 fingerprint (hex), subject, and DER certificate. */
export interface KnownCertificateAuthority {
  readonly fingerprint: string;
  readonly subject: string;
  readonly der: Buffer;
}

/** Remembers these CAs (one already known is left as it is). */
export async function rememberCertificateAuthorities(
  db: Db,
  authorities: readonly KnownCertificateAuthority[],
  now: string,
): Promise<void> {
  if (authorities.length === 0) return;
  await db
    .insertInto('certificate_authorities')
    .values(
      authorities.map((authority) => ({
        fingerprint: authority.fingerprint,
        subject: authority.subject,
        certificate: authority.der.toString('base64'),
        first_seen_at: now,
      })),
    )
    .onConflict((conflict) => conflict.column('fingerprint').doNothing())
    .execute();
}

/** Every known CA (a handful: the MDM's issuing CAs). */
export async function allCertificateAuthorities(db: Db): Promise<KnownCertificateAuthority[]> {
  const rows = await db
    .selectFrom('certificate_authorities')
    .select(['fingerprint', 'subject', 'certificate'])
    .orderBy('fingerprint')
    .execute();
  return rows.map((row) => ({
    fingerprint: row.fingerprint,
    subject: row.subject,
    der: Buffer.from(row.certificate, 'base64'),
  }));
}

/** A revocation list held back because it would retire too many devices at once. */
export interface RevocationListHold {
  /** SHA-256 of the list's DER, hex. */
  readonly sha256: string;
  readonly issuer: string;
  /** The file or URL it was read from. */
  readonly location: string;
  /** How many live devices it would retire, when it was held. */
  readonly devices: number;
  readonly heldAt: string;
  readonly confirmedAt: string | null;
}

/** Records a held list (a list held before keeps its row and any confirmation). */
export async function holdRevocationList(db: Db, hold: Omit<RevocationListHold, 'confirmedAt'>): Promise<void> {
  await db
    .insertInto('revocation_list_holds')
    .values({
      sha256: hold.sha256,
      issuer: hold.issuer,
      location: hold.location,
      devices: hold.devices,
      held_at: hold.heldAt,
      confirmed_at: null,
    })
    .onConflict((conflict) => conflict.column('sha256').doNothing())
    .execute();
}

/** The held lists, oldest first: those waiting, and (with `confirmed`) those confirmed too. */
export async function revocationListHolds(db: Db, options: { confirmed: boolean }): Promise<RevocationListHold[]> {
  let query = db.selectFrom('revocation_list_holds').selectAll().orderBy('held_at').orderBy('sha256');
  if (!options.confirmed) query = query.where('confirmed_at', 'is', null);
  const rows = await query.execute();
  return rows.map((row) => ({
    sha256: row.sha256,
    issuer: row.issuer,
    location: row.location,
    devices: row.devices,
    heldAt: row.held_at,
    confirmedAt: row.confirmed_at,
  }));
}

/** Confirms a held list; false when no list of that SHA-256 is held. */
export async function confirmRevocationList(db: Db, sha256: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('revocation_list_holds')
    .set({ confirmed_at: now })
    .where('sha256', '=', sha256)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Whether an administrator confirmed the list of this SHA-256. */
export async function isRevocationListConfirmed(db: Db, sha256: string): Promise<boolean> {
  const row = await db
    .selectFrom('revocation_list_holds')
    .select('sha256')
    .where('sha256', '=', sha256)
    .where('confirmed_at', 'is not', null)
    .executeTakeFirst();
  return row !== undefined;
}
