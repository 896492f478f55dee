// One step per kind of eduVPN record: where its pages come from, how a page is checked against
// this portal, and how what it brings is written (users, configurations and authorizations also
// noted in `imported_records`, so that a later run leaves them once they were removed here; so
// are the configurations it leaves because their user is disabled here, or eduVPN refuses them for
// their profile's `aclPermissionList`, so that they stay out).
// The plan walks every step to count and find conflicts; the import walks them again, each in
// its own transaction, and writes.
import type { Transaction } from 'kysely';
import type { EduVpnDeployment, EduVpnRecordKind } from '../../eduvpn/deployment.js';
import type { PortalConfig } from '../../config/portal-config.js';
import type { UserId } from '../../shared/ids.js';
import { insertAuthorizations } from '../../storage/authorizations.js';
import { insertImportedCertificates } from '../../storage/certificates.js';
import { insertImportedConnections } from '../../storage/connection-log.js';
import type { Db } from '../../storage/database.js';
import { noteImportedRecords, type ImportedRecord } from '../../storage/imported-records.js';
import { adoptPoolIndexes, type PoolKey } from '../../storage/ip-pools.js';
import type { Database } from '../../storage/schema.js';
import { insertDailyStatsIfMissing } from '../../storage/statistics.js';
import { insertImportedUsers } from '../../storage/users.js';
import { insertImportedPeers } from '../../storage/wg-peers.js';
import {
  checkCertificates,
  checkPeers,
  noteConfiguration,
  type ImportFacts,
  type PageOutcome,
  type PeerToBring,
} from './configurations.js';
import {
  authorizationNoteExpiry,
  checkAuthorizations,
  checkConnectionLog,
  checkDailyStatistics,
  checkUsers,
} from './other-records.js';

/** Writes one page's records; answers how many went in. */
export type PageWrite = (trx: Transaction<Database>) => Promise<number>;

/** One kind, its record types hidden: walked page by page, each outcome with the write that would bring it. */
export interface KindStep {
  readonly kind: EduVpnRecordKind;
  /** Whether what it brings shows in the users or connections listings (their counter must move). */
  readonly listed: boolean;
  /**
   * Whether every record a page's check found to bring must go in (users, authorizations and
   * configurations, which the write notes as brought): one its insert skips was made here
   * after the check (an Admin API call while the import ran), and would otherwise be neither
   * here nor ever brought again. The history and the statistics skip what is here on purpose.
   */
  readonly bringsAll: boolean;
  walk(
    config: PortalConfig,
    db: Db,
    deployment: EduVpnDeployment,
    facts: ImportFacts,
    each: (outcome: PageOutcome<unknown>, write: PageWrite, users: readonly UserId[]) => Promise<void>,
  ): Promise<void>;
}

function kindStep<Record, Row>(definition: {
  readonly kind: EduVpnRecordKind;
  readonly listed: boolean;
  readonly pages: (deployment: EduVpnDeployment) => AsyncIterable<readonly Record[]>;
  readonly note?: (facts: ImportFacts, page: readonly Record[]) => void;
  readonly check: (
    config: PortalConfig,
    db: Db,
    page: readonly Record[],
    facts: ImportFacts,
  ) => Promise<PageOutcome<Row>>;
  readonly insert: (trx: Transaction<Database>, rows: readonly Row[]) => Promise<number>;
  /** What of a brought row `imported_records` keeps: users, configurations and authorizations only. */
  readonly remembered?: (row: Row, facts: ImportFacts) => Omit<ImportedRecord, 'importedAt'>;
  /** The user a brought row is issued to (configurations): the import checks it is not disabled here as it commits. */
  readonly userOf?: (row: Row) => UserId;
}): KindStep {
  const { remembered, userOf } = definition;
  return {
    kind: definition.kind,
    listed: definition.listed,
    bringsAll: remembered !== undefined,
    async walk(config, db, deployment, facts, each) {
      for await (const page of definition.pages(deployment)) {
        definition.note?.(facts, page);
        const outcome = await definition.check(config, db, page, facts);
        await each(
          outcome,
          async (trx) => {
            const inserted = outcome.bring.length === 0 ? 0 : await definition.insert(trx, outcome.bring);
            const brought = remembered === undefined ? [] : outcome.bring.map((row) => remembered(row, facts));
            const notes = [...brought, ...outcome.withheld].map((note) => ({ ...note, importedAt: facts.now }));
            if (notes.length > 0) await noteImportedRecords(trx, notes);
            return inserted;
          },
          userOf === undefined ? [] : outcome.bring.map(userOf),
        );
      }
    },
  };
}

/** Inserts WireGuard peers and marks their indexes taken in their pools. */
async function insertPeers(trx: Transaction<Database>, peers: readonly PeerToBring[]): Promise<number> {
  const inserted = new Set<string>(await insertImportedPeers(trx, peers));
  const pools = new Map<string, { readonly pool: PoolKey; readonly indexes: number[] }>();
  for (const peer of peers) {
    if (!inserted.has(peer.publicKey)) continue;
    const name = JSON.stringify([peer.pool.profileId, peer.pool.nodeNumber, peer.pool.rangeFour, peer.pool.rangeSix]);
    const entry = pools.get(name) ?? { pool: peer.pool, indexes: [] };
    pools.set(name, entry);
    entry.indexes.push(peer.poolIndex);
  }
  for (const { pool, indexes } of pools.values()) await adoptPoolIndexes(trx, pool, indexes);
  return inserted.size;
}

/** Every kind, by name. */
export const KIND_STEPS: Readonly<Record<EduVpnRecordKind, KindStep>> = {
  users: kindStep({
    kind: 'users',
    listed: true,
    pages: (deployment) => deployment.users(),
    check: (_config, db, page, facts) => checkUsers(db, page, facts),
    insert: insertImportedUsers,
    remembered: (user) => ({ kind: 'user', recordId: user.userId, expiresAt: null }),
  }),
  authorizations: kindStep({
    kind: 'authorizations',
    listed: true,
    pages: (deployment) => deployment.authorizations(),
    check: (_config, db, page, facts) => checkAuthorizations(db, page, facts),
    insert: insertAuthorizations,
    remembered: (authorization, facts) => ({
      kind: 'authorization',
      recordId: authorization.authKey,
      expiresAt: authorizationNoteExpiry(authorization, facts),
    }),
  }),
  wireGuardPeers: kindStep({
    kind: 'wireGuardPeers',
    listed: true,
    pages: (deployment) => deployment.wireGuardPeers(),
    note: (facts, page) => {
      for (const peer of page) noteConfiguration(facts, peer, peer.publicKey);
    },
    check: checkPeers,
    insert: insertPeers,
    remembered: (peer) => ({ kind: 'wireguard', recordId: peer.publicKey, expiresAt: peer.expiresAt }),
    userOf: (peer) => peer.userId,
  }),
  certificates: kindStep({
    kind: 'certificates',
    listed: true,
    pages: (deployment) => deployment.certificates(),
    note: (facts, page) => {
      for (const certificate of page) noteConfiguration(facts, certificate, certificate.commonName);
    },
    check: checkCertificates,
    insert: insertImportedCertificates,
    remembered: (certificate) => ({
      kind: 'openvpn',
      recordId: certificate.commonName,
      expiresAt: certificate.expiresAt,
    }),
    userOf: (certificate) => certificate.userId,
  }),
  connectionLog: kindStep({
    kind: 'connectionLog',
    listed: false,
    pages: (deployment) => deployment.connectionLog(),
    check: (_config, db, page, facts) => checkConnectionLog(db, page, facts),
    insert: insertImportedConnections,
  }),
  dailyStatistics: kindStep({
    kind: 'dailyStatistics',
    listed: false,
    pages: (deployment) => deployment.dailyStatistics(),
    check: (_config, db, page) => checkDailyStatistics(db, page),
    // A day this portal counted nobody on (it ran before the move) takes eduVPN's figures.
    insert: (trx, rows) => insertDailyStatsIfMissing(trx, rows, true),
  }),
};

/** The order the plan checks in: the configurations first, which tell the users' and authorizations' facts. */
export const CHECK_ORDER: readonly EduVpnRecordKind[] = [
  'wireGuardPeers',
  'certificates',
  'users',
  'authorizations',
  'connectionLog',
  'dailyStatistics',
];
