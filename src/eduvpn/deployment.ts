// What an eduVPN 3.x server keeps on disk, in the shape the importer needs: the reader
// (src/eduvpn/read-deployment.ts) fills it from the database and key files, the import
// (src/core/importing/) writes it into this portal. Times are already in this portal's form
// (formatAtom: `2027-02-20T10:11:12+00:00`); everything else is as eduVPN stored it.
import type { NodeNumber, ProfileId, UserId, WireGuardKey } from '../shared/ids.js';

/** Schema versions of eduVPN 3.x the reader understands (table `version`); any other is refused. */
export const KNOWN_EDUVPN_SCHEMA_VERSIONS = ['2022022201', '2023011801'] as const;
export type EduVpnSchemaVersion = (typeof KNOWN_EDUVPN_SCHEMA_VERSIONS)[number];

export interface EduVpnUser {
  readonly userId: UserId;
  readonly lastSeen: string;
  /** JSON array of strings, as stored (opaque: attribute prefixes from 3.5 stay as they are). */
  readonly permissionList: string;
  readonly authData: string | null;
  readonly isDisabled: boolean;
}

/**
 * A record of a table whose rows belong to a user (foreign key `user_id`): the user is the row
 * of `users` eduVPN's database matches it to, compared as that database compares (MariaDB and
 * MySQL without regard to case and trailing spaces: `ALICE` is `alice`'s there).
 */
export interface EduVpnUserOwned {
  /** The matched user's id as `users` has it; `user_id` as written when none matched. */
  readonly userId: UserId;
  /** False when no user matched `user_id` (a row the foreign key should have kept out). */
  readonly userFound: boolean;
}

export interface EduVpnAuthorization extends EduVpnUserOwned {
  readonly authKey: string;
  readonly clientId: string;
  readonly scope: string;
  readonly authorizedAt: string;
  readonly expiresAt: string;
}

export interface EduVpnWireGuardPeer extends EduVpnUserOwned {
  readonly publicKey: WireGuardKey;
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly displayName: string;
  /** Bare addresses, no prefix length. */
  readonly ipFour: string;
  readonly ipSix: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly authKey: string | null;
}

export interface EduVpnCertificate extends EduVpnUserOwned {
  readonly commonName: string;
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly displayName: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly authKey: string | null;
}

export interface EduVpnConnectionLogEntry {
  /**
   * The user eduVPN's database matches `user_id` to, as in EduVpnUserOwned (`ALICE`'s history is
   * `alice`'s on MariaDB); `user_id` as written when none does: eduVPN keeps the history of a
   * user it deleted (connection_log has no foreign key), and it is history all the same.
   */
  readonly userId: UserId;
  /**
   * `user_id` as written: the row's own, what its log id here is derived from, so that the id
   * stays when the match changes (the user deleted in eduVPN between two runs of the import).
   */
  readonly writtenUserId: UserId;
  readonly profileId: ProfileId;
  readonly vpnProto: 'wireguard' | 'openvpn';
  /** The WireGuard public key or the OpenVPN common name. */
  readonly connectionId: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly bytesIn: number | null;
  readonly bytesOut: number | null;
}

export interface EduVpnDailyStatistics {
  /** YYYY-MM-DD. */
  readonly date: string;
  readonly profileId: ProfileId;
  readonly maxConnectionCount: number;
  readonly uniqueUserCount: number;
}

/** The secrets that issued files and running scripts depend on; null or absent: not found. */
export interface EduVpnKeys {
  /** keys/admin-api.key, trimmed. */
  readonly adminApiKey: string | null;
  /** keys/node.N.key, trimmed, by node number. */
  readonly nodeKeys: ReadonlyMap<NodeNumber, string>;
  /** keys/ca/ca.crt and ca.key (PEM, Ed25519 PKCS#8), both or neither. */
  readonly openVpnCa: { readonly certificatePem: string; readonly privateKeyPem: string } | null;
  /** data keys/tls-crypt-<profile>.key, as stored, by profile. */
  readonly tlsCryptKeys: ReadonlyMap<ProfileId, string>;
  /** Each node's own wireguard.key (from the node host), by node number. */
  readonly wireGuardPrivateKeys: ReadonlyMap<NodeNumber, WireGuardKey>;
  /** data keys/wireguard.N.public.key: what the issued files name as the node's key. */
  readonly wireGuardPublicKeys: ReadonlyMap<NodeNumber, WireGuardKey>;
}

/** Kinds of records the import brings over, each in its own transaction, in this order. */
export const EDUVPN_RECORD_KINDS = [
  'users',
  'authorizations',
  'wireGuardPeers',
  'certificates',
  'connectionLog',
  'dailyStatistics',
] as const;
export type EduVpnRecordKind = (typeof EDUVPN_RECORD_KINDS)[number];

/** What the import cannot bring, counted so the administrator is told rather than left to find out. */
export interface EduVpnLeftBehind {
  /** local_users: password hashes for the user portal's own login, which this portal does not have. */
  readonly localUsers: number;
  /** oauth_refresh_token_log: the apps' refresh tokens (this portal serves no apps). */
  readonly refreshTokens: number;
  /** live_stats: the last minutes' connection counts, rebuilt here by the reconcile pass. */
  readonly liveStatistics: number;
  /** Unique guest users per day (aggregate_stats.unique_guest_user_count): no guest access here. */
  readonly guestUserCounts: number;
}

/** An eduVPN deployment opened for reading. Records come in pages, in a stable order. */
export interface EduVpnDeployment {
  /** Where it was read from, for messages (database location without a password). */
  readonly description: string;
  readonly schemaVersion: EduVpnSchemaVersion;
  readonly keys: EduVpnKeys;
  count(kind: EduVpnRecordKind): Promise<number>;
  users(): AsyncIterable<readonly EduVpnUser[]>;
  authorizations(): AsyncIterable<readonly EduVpnAuthorization[]>;
  wireGuardPeers(): AsyncIterable<readonly EduVpnWireGuardPeer[]>;
  certificates(): AsyncIterable<readonly EduVpnCertificate[]>;
  connectionLog(): AsyncIterable<readonly EduVpnConnectionLogEntry[]>;
  dailyStatistics(): AsyncIterable<readonly EduVpnDailyStatistics[]>;
  leftBehind(): Promise<EduVpnLeftBehind>;
  close(): Promise<void>;
}

/** Where the reader finds a deployment; the CLI fills it from its options and the package defaults. */
export interface EduVpnLocation {
  /** The portal's configuration folder (default /etc/vpn-user-portal): keys/admin-api.key, keys/node.N.key, keys/ca/. */
  readonly configDir: string;
  /** The portal's data folder (default /var/lib/vpn-user-portal): keys/tls-crypt-*.key, keys/wireguard.N.public.key. */
  readonly dataDir: string;
  /** `sqlite:PATH`, `postgres://…` or `mysql://…` (MariaDB/MySQL); default sqlite:<dataDir>/db.sqlite. */
  readonly database: string;
  /** Each node's wireguard.key file (from /etc/vpn-server-node/keys/ on the node), by node number. */
  readonly nodeWireGuardKeyFiles: ReadonlyMap<NodeNumber, string>;
}
