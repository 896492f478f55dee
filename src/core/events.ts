// The one place where core announces what happened: a configuration was created, deleted or
// expired, a user disabled, enabled or destroyed, a client connected or disconnected, a node
// went down or came back, a reconcile pass finished. Features that react to these (the
// connection log, hooks, metrics, webhooks, audit) are listeners, one file each, wired in the
// composition root; use cases do not know them.
//
// Three kinds of listener. One that may refuse a change (`approval`: the connect script may
// refuse an OpenVPN client) is asked first, before anything is written. One that writes to the
// database does so in the transaction of the change it hears about (`inTransaction`): what it
// writes commits or rolls back with the change, so a recorded change really happened and a
// change that happened is recorded. One that tells the outside world (`afterCommit`) hears only
// of changes that are durable; its failures are logged and never fail the call.
import type { Logger } from 'pino';
import type { OpenVpnCertificate } from '../storage/certificates.js';
import type { Transaction } from 'kysely';
import type { Db, Executor } from '../storage/database.js';
import type { Database } from '../storage/schema.js';
import type { WireGuardPeer } from '../storage/wg-peers.js';
import type { NodeNumber, ProfileId, UserId, VpnProto } from '../shared/ids.js';

interface EventBase {
  readonly at: Date;
}

/** A configuration: a WireGuard public key or an OpenVPN certificate's Common Name. */
export interface ConfigurationRef {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly connectionId: string;
  readonly vpnProto: VpnProto;
  readonly nodeNumber: NodeNumber;
}

/** A session as its start recorded it. */
export interface SessionDetails {
  readonly userId: string;
  readonly profileId: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
}

export type PortalEvent =
  | (EventBase & { readonly type: 'user.disabled' | 'user.enabled' | 'user.destroyed'; readonly userId: UserId })
  | (EventBase & { readonly type: 'configuration.created'; readonly configuration: ConfigurationRef; readonly expiresAt: Date })
  | (EventBase & { readonly type: 'configuration.deleted' | 'configuration.expired'; readonly configuration: ConfigurationRef })
  | (EventBase & {
      readonly type: 'session.started';
      readonly configuration: ConfigurationRef;
      readonly ipFour: string;
      readonly ipSix: string;
      /** The client's public address, as the node saw it; null when the node could not tell. */
      readonly originatingIp: string | null;
    })
  | (EventBase & {
      readonly type: 'session.ended';
      readonly connectionId: string;
      readonly vpnProto: VpnProto;
      readonly nodeNumber: NodeNumber;
      readonly bytesIn: number;
      readonly bytesOut: number;
      /** What the session's start recorded; null when the portal never heard of its start. */
      readonly session: SessionDetails | null;
    })
  | (EventBase & { readonly type: 'node.down'; readonly nodeNumber: NodeNumber; readonly reason: string })
  | (EventBase & { readonly type: 'node.up'; readonly nodeNumber: NodeNumber })
  | (EventBase & {
      readonly type: 'reconcile.finished';
      readonly nodeNumber: NodeNumber;
      readonly reachable: boolean;
      readonly added: number;
      readonly removed: number;
      readonly disconnected: number;
      readonly durationMs: number;
    });

export type PortalEventType = PortalEvent['type'];

/**
 * Thrown by an approval listener that refuses the change (a connect script that exits non-zero
 * refuses an OpenVPN client): nothing is written and the use case says no.
 */
export class ListenerRefusal extends Error {
  override readonly name = 'ListenerRefusal';
}

export type TransactionListener = (event: PortalEvent, db: Executor) => Promise<void>;
export type CommitListener = (event: PortalEvent) => void | Promise<void>;
export type ApprovalListener = (event: PortalEvent) => Promise<void>;

export class PortalEvents {
  readonly #approval: ApprovalListener[] = [];
  readonly #inTransaction: TransactionListener[] = [];
  readonly #afterCommit: CommitListener[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** A listener asked before the change is written; it refuses by throwing ListenerRefusal. */
  approval(listener: ApprovalListener): void {
    this.#approval.push(listener);
  }

  /** A listener that writes in the change's own transaction (or on the database, for changes without one). */
  inTransaction(listener: TransactionListener): void {
    this.#inTransaction.push(listener);
  }

  /** A listener told once the change is durable. */
  afterCommit(listener: CommitListener): void {
    this.#afterCommit.push(listener);
  }

  /**
   * Called by a use case inside the transaction of the change (or with the database itself):
   * the in-transaction listeners run now, and a failure fails the change.
   */
  async record(db: Executor, ...events: readonly PortalEvent[]): Promise<void> {
    for (const event of events) for (const listener of this.#approval) await listener(event);
    for (const event of events) for (const listener of this.#inTransaction) await listener(event, db);
  }

  /**
   * Runs a change in one transaction; the events it announces are recorded in that transaction
   * and published once it committed (never when it rolled back).
   */
  async change<T>(db: Db, work: (trx: Transaction<Database>, announce: (...events: PortalEvent[]) => Promise<void>) => Promise<T>): Promise<T> {
    const announced: PortalEvent[] = [];
    const result = await db.transaction().execute((trx) =>
      work(trx, async (...events) => {
        await this.record(trx, ...events);
        announced.push(...events);
      }),
    );
    this.publish(...announced);
    return result;
  }

  /** Called by a use case once the change committed (events without a transaction come only here). */
  publish(...events: readonly PortalEvent[]): void {
    for (const event of events) {
      for (const listener of this.#afterCommit) {
        void Promise.resolve()
          .then(() => listener(event))
          .catch((error: unknown) => this.#logger.error({ err: error, event: event.type }, 'an event listener failed'));
      }
    }
  }
}

export function wireGuardConfiguration(peer: WireGuardPeer): ConfigurationRef {
  return { userId: peer.userId, profileId: peer.profileId, connectionId: peer.publicKey, vpnProto: 'wireguard', nodeNumber: peer.nodeNumber };
}

export function openVpnConfiguration(certificate: OpenVpnCertificate): ConfigurationRef {
  return {
    userId: certificate.userId,
    profileId: certificate.profileId,
    connectionId: certificate.commonName,
    vpnProto: 'openvpn',
    nodeNumber: certificate.nodeNumber,
  };
}
