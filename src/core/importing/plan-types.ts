// What the eduVPN import found, before it writes anything: per kind of record how many it
// would bring, how many are here already, how many conflict and how many it leaves because they
// expired; the key files; every conflict, naming its record; what it cannot bring at all.
import type { EduVpnLeftBehind, EduVpnRecordKind, EduVpnSchemaVersion } from '../../eduvpn/deployment.js';
import type { KeyFileState } from '../../keys/key-store.js';
import type { PortalContext } from '../context.js';

/** What the import needs of the portal: no nodes, no listings cache (the counter tells a running portal). */
export type ImportContext = Pick<PortalContext, 'config' | 'db' | 'keys' | 'openVpnKeys' | 'events' | 'clock'>;

export interface KindCounts {
  /** Not here yet: the import brings them. */
  toBring: number;
  /** Here already, the same record (a second run finds everything here). */
  alreadyHere: number;
  conflicting: number;
  /** Expired configurations, and expired authorizations no configuration names: not brought. */
  expired: number;
}

/** Kinds of what the import checks: the records, and the key files. */
export type ImportedKind = EduVpnRecordKind | 'keys';

/** Something that stops the import: the record it is about, and why. */
export interface ImportConflict {
  readonly kind: ImportedKind;
  /** The record: a user id, a public key, a common name, a key file, … */
  readonly record: string;
  readonly reason: string;
}

/** A key file the import brings, and how it compares with the file here. */
export interface PlannedKeyFile {
  /** What it is, for messages: `Admin API secret`, `node 1 WireGuard private key`, … */
  readonly name: string;
  readonly path: string;
  readonly state: KeyFileState;
}

/** Conflicts kept in full; beyond this many only their number (a wrong database conflicts everywhere). */
export const LISTED_CONFLICTS = 10_000;

export interface ImportPlan {
  /** Where the deployment was read from (without a password). */
  readonly source: string;
  readonly schemaVersion: EduVpnSchemaVersion;
  readonly counts: Readonly<Record<EduVpnRecordKind, KindCounts>>;
  readonly keyFiles: readonly PlannedKeyFile[];
  /** The first LISTED_CONFLICTS conflicts, in the order found. */
  readonly conflicts: readonly ImportConflict[];
  /** Every conflict, also those not listed. */
  readonly conflictCount: number;
  readonly leftBehind: EduVpnLeftBehind;
}

/** Told after each page of records, for a progress display. */
export type ImportProgress = (step: {
  readonly phase: 'checking' | 'importing';
  readonly kind: EduVpnRecordKind;
  readonly done: number;
  readonly total: number;
}) => void;

/** Collects conflicts: the first LISTED_CONFLICTS in full, the others counted. */
export class ConflictList {
  readonly listed: ImportConflict[] = [];
  count = 0;

  add(conflict: ImportConflict): void {
    this.count++;
    if (this.listed.length < LISTED_CONFLICTS) this.listed.push(conflict);
  }
}

export function emptyCounts(): KindCounts {
  return { toBring: 0, alreadyHere: 0, conflicting: 0, expired: 0 };
}
