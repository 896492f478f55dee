// An eduVPN deployment held in arrays, for tests of the import before (and beside) the reader
// of a real one: the records are handed out in pages of `pageSize`, in the order given.
import type {
  EduVpnAuthorization,
  EduVpnCertificate,
  EduVpnConnectionLogEntry,
  EduVpnDailyStatistics,
  EduVpnDeployment,
  EduVpnKeys,
  EduVpnLeftBehind,
  EduVpnRecordKind,
  EduVpnUser,
  EduVpnWireGuardPeer,
} from '../../src/eduvpn/deployment.js';
import { asNodeNumber, asProfileId, asUserId, asWireGuardKey } from '../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';

export interface EduVpnRecords {
  users: EduVpnUser[];
  authorizations: EduVpnAuthorization[];
  wireGuardPeers: EduVpnWireGuardPeer[];
  certificates: EduVpnCertificate[];
  connectionLog: EduVpnConnectionLogEntry[];
  dailyStatistics: EduVpnDailyStatistics[];
}

export const NO_KEYS: EduVpnKeys = {
  adminApiKey: null,
  nodeKeys: new Map(),
  openVpnCa: null,
  tlsCryptKeys: new Map(),
  wireGuardPrivateKeys: new Map(),
  wireGuardPublicKeys: new Map(),
};

export function emptyRecords(): EduVpnRecords {
  return {
    users: [],
    authorizations: [],
    wireGuardPeers: [],
    certificates: [],
    connectionLog: [],
    dailyStatistics: [],
  };
}

export function inMemoryDeployment(
  records: EduVpnRecords,
  options: { keys?: EduVpnKeys; pageSize?: number; leftBehind?: Partial<EduVpnLeftBehind> } = {},
): EduVpnDeployment {
  const pageSize = options.pageSize ?? 3;
  async function* pages<T>(rows: readonly T[]): AsyncIterable<readonly T[]> {
    for (let start = 0; start < rows.length; start += pageSize) yield rows.slice(start, start + pageSize);
  }
  return {
    description: 'in-memory eduVPN deployment',
    schemaVersion: '2023011801',
    keys: options.keys ?? NO_KEYS,
    count: async (kind: EduVpnRecordKind) => records[kind].length,
    users: () => pages(records.users),
    authorizations: () => pages(records.authorizations),
    wireGuardPeers: () => pages(records.wireGuardPeers),
    certificates: () => pages(records.certificates),
    connectionLog: () => pages(records.connectionLog),
    dailyStatistics: () => pages(records.dailyStatistics),
    leftBehind: async () => ({
      localUsers: 0,
      refreshTokens: 0,
      liveStatistics: 0,
      guestUserCounts: 0,
      ...options.leftBehind,
    }),
    close: async () => {},
  };
}

export function eduVpnUser(userId: string, fields: Partial<EduVpnUser> = {}): EduVpnUser {
  return {
    userId: asUserId(userId),
    lastSeen: '2026-11-01T08:00:00+00:00',
    permissionList: '[]',
    authData: null,
    isDisabled: false,
    ...fields,
  };
}

/** A WireGuard peer of profile `employees` on node 0 at pool index `index` of 10.44.0.0/24 and fd44::/64. */
export function eduVpnPeer(
  userId: string,
  index: number,
  fields: Partial<EduVpnWireGuardPeer> = {},
): EduVpnWireGuardPeer {
  return {
    publicKey: asWireGuardKey(generateWireGuardKeyPair().publicKey),
    userId: asUserId(userId),
    userFound: true,
    profileId: asProfileId('employees'),
    nodeNumber: asNodeNumber(0),
    displayName: 'Admin API',
    ipFour: `10.44.0.${2 + index}`,
    ipSix: `fd44::${(2 + index).toString(16)}`,
    createdAt: '2026-10-01T08:00:00+00:00',
    expiresAt: '2099-01-01T00:00:00+00:00',
    authKey: null,
    ...fields,
  };
}

export function eduVpnCertificate(userId: string, fields: Partial<EduVpnCertificate> = {}): EduVpnCertificate {
  return {
    commonName: Buffer.from(generateWireGuardKeyPair().publicKey, 'base64').toString('base64'),
    userId: asUserId(userId),
    userFound: true,
    profileId: asProfileId('employees'),
    nodeNumber: asNodeNumber(0),
    displayName: 'Admin API',
    createdAt: '2026-10-02T08:00:00+00:00',
    expiresAt: '2099-01-01T00:00:00+00:00',
    authKey: null,
    ...fields,
  };
}
