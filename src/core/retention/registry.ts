// The retention registry: every kind of record the portal deletes (or blanks) after a time of
// its own, with the option that sets that time. The daily housekeeping runs each entry in order,
// skips the records of users under a legal hold, and writes one audit row with the counts per
// kind (src/core/retention/apply.ts). A new kind of record joins with one entry here: its name
// (as the audit row and the log say it), its option, and a storage function that removes what
// ended before a time except the held users' records, saying how many of each. Each removes in
// batches (src/storage/batches.ts), so a backlog never outruns the database's time limit, and
// asks `stopping` between two.
import type { PortalConfig } from '../../config/portal-config.js';
import type { IsoDuration } from '../../shared/iso-duration.js';
import { pruneAuditLog } from '../../storage/audit-log.js';
import { blankOriginatingAddresses, pruneConnectionLog } from '../../storage/connection-log.js';
import type { Stopping } from '../../storage/batches.js';
import type { Db } from '../../storage/database.js';
import { pruneEndedLegalHolds, type RetentionCount } from '../../storage/legal-holds.js';
import { pruneNatMappings } from '../../storage/nat-mappings.js';
import { pruneRadiusOutbox } from '../../storage/radius-outbox.js';
import { pruneEndedRadiusSessions } from '../../storage/radius-sessions.js';
import { pruneRevocations } from '../../storage/revocations.js';
import { pruneDeliveries } from '../../storage/webhook-deliveries.js';

export interface RetentionKind {
  /** The kind's name in the housekeeping's audit row and log line (`connection_log`). */
  readonly kind: string;
  /** The configuration option its retention comes from, for the docs and the log. */
  readonly option: string;
  readonly retention: (config: PortalConfig) => IsoDuration;
  /**
   * Removes the records that ended before `before` (ATOM), except those of `heldUsers` (users
   * under a legal hold; a kind whose records name no user ignores them and says 0 held). When
   * `stopping` says so between two batches it ends there, saying what went so far. `config`
   * names what a kind leaves to others (the RADIUS servers whose records the worker sends).
   */
  readonly prune: (
    db: Db,
    before: string,
    heldUsers: readonly string[],
    stopping: Stopping,
    config: PortalConfig,
  ) => Promise<RetentionCount>;
}

/**
 * Run in this order: the history's rows go before their addresses are blanked, so no row counts
 * twice, and before the NAT mappings, which the sessions still kept keep.
 */
export const RETENTION_KINDS: readonly RetentionKind[] = [
  {
    kind: 'connection_log',
    option: 'connectionLogRetention',
    retention: (config) => config.connectionLogRetention,
    prune: pruneConnectionLog,
  },
  {
    kind: 'originating_ip',
    option: 'originatingIpRetention',
    retention: (config) => config.originatingIpRetention,
    prune: blankOriginatingAddresses,
  },
  {
    // A node's NAT mapping of a moment is needed as long as the sessions of that moment are kept.
    kind: 'nat_mappings',
    option: 'connectionLogRetention',
    retention: (config) => config.connectionLogRetention,
    prune: pruneNatMappings,
  },
  {
    // Copies in flight to the RADIUS servers, not the portal's record of a session (the history
    // is, and a hold keeps that): past maxAge those nobody sends any more go, held or not; those
    // of a configured server are the worker's (sent at least once, dropped with an audit row).
    // So do the rows of sessions that ended while accounting was off, which no Stop took.
    kind: 'accounting_outbox',
    option: 'accounting.radius.maxAge',
    retention: (config) => config.accounting.radius.maxAge,
    prune: async (db, before, _held, stopping, config) => ({
      removed:
        (await pruneRadiusOutbox(
          db,
          before,
          config.accounting.radius.servers.map((server) => server.address),
          stopping,
        )) + (await pruneEndedRadiusSessions(db, before, stopping)),
      held: 0,
    }),
  },
  {
    // Copies sent to subscribers, as the outbox above: the payloads name users and addresses,
    // so they go with their own retention; a hold keeps the history they were made from.
    kind: 'webhook_deliveries',
    option: 'webhooks.deliveryLogRetention',
    retention: (config) => config.webhooks.deliveryLogRetention,
    prune: async (db, before, _held, stopping) => ({ removed: await pruneDeliveries(db, before, stopping), held: 0 }),
  },
  {
    kind: 'audit_log',
    option: 'auditLogRetention',
    retention: (config) => config.auditLogRetention,
    prune: pruneAuditLog,
  },
  {
    // Receipts are proof of what an audited call did: kept as long as its audit row.
    kind: 'revocations',
    option: 'auditLogRetention',
    retention: (config) => config.auditLogRetention,
    prune: pruneRevocations,
  },
  {
    // An ended hold names a user and why: kept as long as the audit rows of its making.
    kind: 'legal_holds',
    option: 'auditLogRetention',
    retention: (config) => config.auditLogRetention,
    prune: async (db, before, _held, stopping) => ({
      removed: await pruneEndedLegalHolds(db, before, stopping),
      held: 0,
    }),
  },
];
