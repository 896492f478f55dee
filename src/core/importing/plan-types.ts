// What the eduVPN import found, before it writes anything: per kind of record how many it would
// bring, how many are here already, how many conflict, how many it leaves because they expired and
// how many because they were revoked here (removed after an earlier import, or of a user destroyed
// or disabled here) or eduVPN refuses them (its profiles' `aclPermissionList`); the key files;
// every conflict and every record removed here, naming it; what it cannot bring at all.
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
  /**
   * Expired configurations, expired authorizations no configuration names, and history rows
   * that ended before `connectionLogRetention` (of users under no legal hold): not brought.
   */
  expired: number;
  /**
   * Brought by an earlier import and removed here since (a configuration revoked, an
   * authorization deleted), or of a user destroyed here (brought or made here; with its
   * configurations and authorizations) or disabled here: not brought, a revocation is final.
   * Also the OpenVPN certificates eduVPN refuses at connect for their profile's
   * `aclPermissionList` (which this portal does not check), and for good.
   */
  removedHere: number;
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

/**
 * A record the import leaves because it was revoked here (removed after an earlier import, or its
 * user destroyed or disabled here) or eduVPN refuses it (an OpenVPN certificate, for its profile's
 * `aclPermissionList`), and how.
 */
export interface RemovedHere {
  readonly kind: EduVpnRecordKind;
  /** A user id, a public key, a common name or an authorization key. */
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

/**
 * A key eduVPN's files name, or a node's key given, that nothing to bring connects with (a node
 * eduVPN retired, or none of whose configurations is brought): told, and not brought, so that a
 * stale file of eduVPN's does not stop the import and no key of such a node is written here.
 */
export interface KeyNotNeeded {
  /** What it is, for messages: `node 3 WireGuard public key`. */
  readonly name: string;
  readonly reason: string;
}

/**
 * A key brought that could not be checked as the others are (a node's WireGuard private key
 * without eduVPN's wireguard.N.public.key to check it against): told, so that the administrator
 * knows, and the import goes on.
 */
export interface KeyWarning {
  /** What it is, for messages: `node 3 WireGuard private key`. */
  readonly name: string;
  readonly reason: string;
}

/** Conflicts (and records removed here) kept in full; beyond this many only their number (a wrong database conflicts everywhere). */
export const LISTED_CONFLICTS = 10_000;

export interface ImportPlan {
  /** Where the deployment was read from (without a password). */
  readonly source: string;
  readonly schemaVersion: EduVpnSchemaVersion;
  readonly counts: Readonly<Record<EduVpnRecordKind, KindCounts>>;
  readonly keyFiles: readonly PlannedKeyFile[];
  /** Keys eduVPN's files name or given that no configuration to bring needs: not brought, and no conflict. */
  readonly keysNotNeeded: readonly KeyNotNeeded[];
  /** Keys brought that went unchecked against eduVPN's issued files: no conflict, but told. */
  readonly keyWarnings: readonly KeyWarning[];
  /** The first LISTED_CONFLICTS conflicts, in the order found. */
  readonly conflicts: readonly ImportConflict[];
  /** Every conflict, also those not listed. */
  readonly conflictCount: number;
  /** The first LISTED_CONFLICTS records left because they were removed here, in the order found. */
  readonly removedHere: readonly RemovedHere[];
  /** Every record removed here, also those not listed. */
  readonly removedHereCount: number;
  readonly leftBehind: EduVpnLeftBehind;
}

/** Told after each page of records, for a progress display. */
export type ImportProgress = (step: {
  readonly phase: 'checking' | 'importing';
  readonly kind: EduVpnRecordKind;
  readonly done: number;
  readonly total: number;
}) => void;

/** Collects records to name: the first LISTED_CONFLICTS in full, the others counted. */
export class ListedRecords<Item> {
  readonly listed: Item[] = [];
  count = 0;

  add(item: Item): void {
    this.count++;
    if (this.listed.length < LISTED_CONFLICTS) this.listed.push(item);
  }
}

/** The conflicts found. */
export class ConflictList extends ListedRecords<ImportConflict> {}

export function emptyCounts(): KindCounts {
  return { toBring: 0, alreadyHere: 0, conflicting: 0, expired: 0, removedHere: 0 };
}
