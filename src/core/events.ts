// The one place where core announces what happened: a configuration was created, deleted or
// expired, a user created, disabled, enabled or destroyed, a client connected or disconnected, a node
// went down or came back, a reconcile pass finished. Features that react to these (the
// connection log, hooks, metrics, webhooks, audit) are listeners, one file each, wired in the
// composition root; use cases do not know them.
//
// Four kinds of listener, one for each moment of a change, in the order they are told:
// - `approval`, asked before anything is written, may refuse the change by throwing
//   ListenerRefusal (the connect script refuses an OpenVPN client);
// - `inTransaction` writes, for each event, in the transaction of the change it hears about:
//   what it writes commits or rolls back with the change, so a recorded change really happened
//   and a change that happened is recorded (events without a transaction of their own, a node
//   going down, are recorded on the database with `record`);
// - `closing` is told once, at the end of a change's transaction, of every event the change
//   announced, and answers the writes to make then (ClosingWrite, src/storage/closing-writes.ts):
//   data, not SQL, so storage holds the statements and runs them in a fixed order whatever the
//   order the listeners were registered in (the listing counter's lock last of all locks). A
//   create, which takes its address pool's row last, makes them part of its final statement
//   (the change's `lastStep`);
// - `afterCommit` tells the outside world, and hears only of changes that are durable; its
//   failures are logged and never fail the call.
//
// Who made a change: the HTTP layer binds the seam to the Admin API call it serves
// (`forCall`, src/core/admin-call.ts) and puts that view into the use case's context. Every
// change made through the view that announced something ends, still inside its transaction,
// with one `admin.call` event: the call, its key, its source address, its parameters and the
// configurations the change touched. The audit log writes that event in the change's
// transaction (a closing write: src/listeners/audit-log.ts), so a recorded change really
// happened and a change that happened is recorded, and no use case writes audit rows or even
// knows about them. Calls that changed nothing (refused, failed, or nothing to do) are
// announced by the HTTP layer after the answer is known.
//
// A change survives a lost connection (PostgreSQL restarted, failed over, a dropped
// connection): its transaction is a function, run again on a fresh connection when the
// connection was lost before COMMIT was sent, for up to `databaseRetryFor`. When it broke after
// COMMIT was sent, the change's marker is read back (src/storage/change-markers.ts): committed,
// and the change is done; not, and it is run again. When its COMMIT got no answer within
// `databaseTimeout` (the server alive but slow, or a network that holds the answer), the call
// answers 503 at once, as every call does after that wait, and the marker is read back behind
// it: a change that committed after all is published then, and the `lateCommit` listeners are
// told (the reconcile pass, so the nodes follow it within seconds). So the work of a change, and the
// in-transaction and closing listeners, must only touch the transaction (no node pushes, no
// other side effects); the events are published once, for the attempt that committed. A change
// PostgreSQL rolled back to end a deadlock or a serialization failure with another transaction
// (40P01, 40001: a SCIM group PATCH and a user's destroy locking the same rows in opposite
// order) is run again the same way, up to four times.
import type { Logger } from 'pino';
import type { OpenVpnCertificate } from '../storage/certificates.js';
import type { Transaction } from 'kysely';
import { changeCommitted, newChangeMarkerId } from '../storage/change-markers.js';
import { runClosingWrites, type ClosingWrite } from '../storage/closing-writes.js';
import { allowIdleForRows } from '../storage/idle-room.js';
import { transactionRetryWindow, type Db } from '../storage/database.js';
import {
  CommitOutcomeUnknown,
  isConnectionLost,
  isRolledBackForConflict,
  mayHaveCommitted,
} from '../storage/errors.js';
import { StatementNeeded, withoutStatements } from '../storage/no-statements.js';
import { OutageWindow } from '../storage/outage-window.js';
import { closedForStaleStatement } from '../storage/statement-names.js';
import type { StoredDevice } from '../storage/devices.js';
import type { NatMapping } from '../storage/nat-mappings.js';
import type { Database } from '../storage/schema.js';
import type { WireGuardPeer } from '../storage/wg-peers.js';
import { appendAll } from '../shared/append-all.js';
import type { DeviceId, NodeNumber, ProfileId, RevocationId, UserId, VpnProto } from '../shared/ids.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';
import type { AdminCall } from './admin-call.js';

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

/** A revocation receipt as its events tell it (src/core/revocations/receipts.ts). */
export interface RevocationNotice {
  readonly revocationId: RevocationId;
  readonly userId: UserId;
  readonly connectionIds: readonly string[];
  readonly nodes: readonly {
    readonly nodeNumber: NodeNumber;
    readonly state: 'pending' | 'applied';
    readonly appliedAt: string | null;
  }[];
}

/** A device, as events name it: the fields of its stored record that identify it. */
export type DeviceRef = Pick<StoredDevice, 'deviceId' | 'userId' | 'profileId' | 'platform' | 'serial' | 'mdmId'>;

/**
 * Why a session ended: the device went quiet (WireGuard's 3 minutes without a handshake), roamed
 * to another address (a new session follows), its peer was removed by the portal, its peer
 * vanished from the node, the OpenVPN client disconnected, or the node gave the OpenVPN
 * session's address to a newer connection before the session's end was heard (`replaced`: its
 * counters are not known yet; its disconnect report, should it come, brings them to its history
 * row alone).
 */
export type SessionEndCause = 'idle' | 'roamed' | 'removed' | 'lost' | 'disconnected' | 'replaced';

/** A session as its start recorded it. */
export interface SessionDetails {
  readonly userId: string;
  readonly profileId: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
  /**
   * When it started (ATOM), as its row says: with the address, it tells the session apart from a
   * newer one of the same configuration on the same address, whose row must stay open.
   */
  readonly connectedAt: string;
}

export type PortalEvent =
  | (EventBase & { readonly type: 'user.enabled'; readonly userId: UserId })
  /** Every configuration of the user leaves its node; the receipt `revocationId` follows that (src/core/revocations/receipts.ts). */
  | (EventBase & {
      readonly type: 'user.disabled';
      readonly userId: UserId;
      readonly revocationId: RevocationId;
      readonly configurations: readonly ConfigurationRef[];
      /** The enrollment tokens its disabling revoked (for good). */
      readonly enrollmentTokenIds: readonly string[];
    })
  /** Announced after the `configuration.deleted` of each of its configurations, under the same receipt. */
  | (EventBase & {
      readonly type: 'user.destroyed';
      readonly userId: UserId;
      readonly revocationId: RevocationId;
      /** The enrollment tokens deleted with it. */
      readonly enrollmentTokenIds: readonly string[];
    })
  /** A configuration was made for a user the portal did not know yet. */
  | (EventBase & { readonly type: 'user.created'; readonly userId: UserId })
  | (EventBase & { readonly type: 'authorizations.deleted'; readonly userId: UserId; readonly count: number })
  /** An Admin API call: recorded with its change, or on its own when it was refused, failed or changed nothing. */
  | (EventBase & {
      readonly type: 'admin.call';
      readonly call: AdminCall;
      /** The HTTP status of the answer. */
      readonly status: number;
      /** Why it was refused or failed; null when it succeeded. */
      readonly detail: string | null;
      /** The configurations the call created or deleted. */
      readonly connectionIds: readonly string[];
      /** The user the change was about when its parameters do not name one (a device's owner); absent: none. */
      readonly userId?: UserId;
    })
  /** /extend moved a configuration's expiry (for OpenVPN with a new certificate for the same key). */
  | (EventBase & {
      readonly type: 'configuration.extended';
      readonly configuration: ConfigurationRef;
      readonly expiresAt: Date;
      readonly previousExpiresAt: Date;
    })
  /** An enrollment token was made or revoked (never the token itself: only its id). */
  | (EventBase & {
      readonly type: 'enrollment_token.created' | 'enrollment_token.revoked';
      readonly tokenId: string;
      readonly userId: UserId;
      readonly profileId: ProfileId;
    })
  /** A device was registered, got a configuration, had one replaced, or was retired (src/core/devices/devices.ts). */
  | (EventBase & {
      readonly type: 'device.registered' | 'device.retired';
      readonly device: DeviceRef;
      /** device.retired by retire_device: the enrollment tokens made for it that it revoked. */
      readonly enrollmentTokenIds?: readonly string[];
    })
  /**
   * A device's configurations left the nodes and stay off them until it is resumed
   * (src/core/devices/suspension.ts); `revocationId` names their receipt, null when it had none.
   */
  | (EventBase & {
      readonly type: 'device.suspended';
      readonly device: DeviceRef;
      readonly reason: string;
      /** Who suspended it: an admin key's name, `mdm`, `(portal)`, … */
      readonly by: string;
      readonly revocationId: RevocationId | null;
      readonly configurations: readonly ConfigurationRef[];
    })
  /** A suspension ended: its configurations may be on their nodes again; `supersedes` names its receipt still open. */
  | (EventBase & {
      readonly type: 'device.resumed';
      readonly device: DeviceRef;
      /** The reason of the suspension that ended. */
      readonly reason: string;
      readonly by: string;
      readonly supersedes: RevocationId | null;
    })
  | (EventBase & {
      readonly type: 'device.enrolled';
      readonly device: DeviceRef;
      readonly configuration: ConfigurationRef;
    })
  | (EventBase & {
      readonly type: 'device.replaced';
      readonly device: DeviceRef;
      readonly configuration: ConfigurationRef;
      /** The configurations of the same profile the new one replaced (each also announced as `configuration.deleted`). */
      readonly replaced: readonly ConfigurationRef[];
    })
  | (EventBase & {
      readonly type: 'configuration.created';
      readonly configuration: ConfigurationRef;
      readonly expiresAt: Date;
      /** Set when a device redeemed an enrollment token for it (the token's id). */
      readonly enrollmentTokenId?: string;
    })
  | (EventBase & {
      readonly type: 'configuration.deleted' | 'configuration.expired';
      readonly configuration: ConfigurationRef;
      /** The revocation receipt that follows its leaving its node. */
      readonly revocationId: RevocationId;
    })
  /** A revocation receipt's every node confirmed (applied), or its deadline passed with a node pending (overdue). */
  | (EventBase & { readonly type: 'revocation.applied' | 'revocation.overdue'; readonly revocation: RevocationNotice })
  | (EventBase & {
      readonly type: 'configuration.expiring';
      readonly configuration: ConfigurationRef;
      readonly expiresAt: Date;
    })
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
      /** Why it ended (RADIUS accounting's Acct-Terminate-Cause says it). */
      readonly cause: SessionEndCause;
      /** What the session's start recorded; null when the portal never heard of its start. */
      readonly session: SessionDetails | null;
    })
  | (EventBase & { readonly type: 'node.down'; readonly nodeNumber: NodeNumber; readonly reason: string })
  | (EventBase & { readonly type: 'node.up'; readonly nodeNumber: NodeNumber })
  /**
   * A node reported a NAT mapping other than its last recorded one (src/core/nodes/nat-history.ts),
   * or one taken out of the configuration translates no more (`none`, removed-nodes-nat.ts); in
   * force from `appliedAt`.
   */
  | (EventBase & {
      readonly type: 'node.nat_changed';
      readonly nodeNumber: NodeNumber;
      readonly appliedAt: Date;
      readonly mapping: NatMapping;
    })
  /** An admin key was made, rotated or revoked (`vpn-portal admin-key`; recorded so the audit log has the command). */
  | (EventBase & {
      readonly type: 'admin_key.created' | 'admin_key.rotated' | 'admin_key.revoked';
      readonly keyName: string;
    })
  /** A legal hold on a user's (or a device's) records was made or released (src/core/retention/legal-holds.ts). */
  | (EventBase & {
      readonly type: 'legal_hold.created' | 'legal_hold.released';
      readonly holdId: string;
      readonly userId: UserId;
      readonly deviceId: DeviceId | null;
    })
  /**
   * The directory changed what it provisioned through SCIM (src/core/directory/): a SCIM user
   * (the link to a portal user, its attributes) or a group (its name, its members). What that
   * did to the user itself (created, disabled, destroyed, configurations deleted) is announced
   * by its own events.
   */
  | (EventBase & {
      readonly type: 'scim.changed';
      readonly resource: 'User' | 'Group';
      readonly action: 'created' | 'replaced' | 'deleted';
      readonly scimId: string;
      /** The portal user of a SCIM user. */
      readonly userId?: UserId;
    })
  /** A webhook subscription was added, deleted or given a new secret (recorded so the audit log has the call). */
  | (EventBase & {
      readonly type: 'webhook.created' | 'webhook.deleted' | 'webhook.secret_rotated';
      readonly webhookId: string;
    })
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

export type ApprovalListener = (event: PortalEvent) => Promise<void>;
export type TransactionListener = (event: PortalEvent, db: Db) => Promise<void>;
/** Told once, at the end of a change's transaction, of every event it announced; answers the writes to make last. */
export type ClosingListener = (events: readonly PortalEvent[]) => readonly ClosingWrite[];
export type CommitListener = (event: PortalEvent) => void | Promise<void>;
/**
 * A change's last step (see `change`): runs after every listener and must run the closing
 * writes after its own writes and locks, in the same statement or after it.
 */
export type LastStep<T, R> = (
  trx: Transaction<Database>,
  value: T,
  closingWrites: readonly ClosingWrite[],
) => Promise<R>;

interface SharedListeners {
  readonly approval: ApprovalListener[];
  readonly withdrawn: ApprovalListener[];
  readonly inTransaction: TransactionListener[];
  readonly closing: ClosingListener[];
  readonly afterCommit: CommitListener[];
  readonly lateCommit: (() => void)[];
}

/** What every view of the seam shares: its listeners, and the read backs still running behind answered calls. */
interface Shared {
  readonly listeners: SharedListeners;
  readonly settling: Set<Promise<void>>;
}

export class PortalEvents {
  readonly #shared: Shared;
  readonly #listeners: SharedListeners;
  readonly #logger: Logger;
  /** The Admin API call this view records changes for (forCall); null on the portal's own seam. */
  readonly #call: AdminCall | null;
  #changesRecorded = 0;
  /** Events the approval listeners approved before their change began (changeUnlessCalledOff): not asked again. */
  readonly #approved = new WeakSet<PortalEvent>();

  constructor(logger: Logger, bound?: { readonly shared: Shared; readonly call: AdminCall | null }) {
    this.#logger = logger;
    this.#shared = bound?.shared ?? {
      listeners: { approval: [], withdrawn: [], inTransaction: [], closing: [], afterCommit: [], lateCommit: [] },
      settling: new Set(),
    };
    this.#listeners = this.#shared.listeners;
    this.#call = bound?.call ?? null;
  }

  /** The same seam (same listeners), with every change recorded as made by `call`. */
  forCall(call: AdminCall): PortalEvents {
    return new PortalEvents(this.#logger, { shared: this.#shared, call });
  }

  /**
   * The portal's own seam (same listeners, no call): for what follows from a change already
   * recorded with its call, such as the sessions its removals ended, which must not be recorded
   * as a second call.
   */
  unbound(): PortalEvents {
    return this.#call === null ? this : new PortalEvents(this.#logger, { shared: this.#shared, call: null });
  }

  /** How many changes committed through this view with an `admin.call` event (0 on the portal's own seam). */
  get changesRecorded(): number {
    return this.#changesRecorded;
  }

  /** A listener asked before the change is written; it refuses by throwing ListenerRefusal. */
  approval(listener: ApprovalListener): void {
    this.#listeners.approval.push(listener);
  }

  /**
   * A listener told when an event the approval listeners approved is not recorded after all (its
   * caller was called off, see changeUnlessCalledOff): what an approval listener did for it that
   * outlives the approval (a connect script's "C") is undone here.
   */
  withdrawn(listener: ApprovalListener): void {
    this.#listeners.withdrawn.push(listener);
  }

  /** A listener that writes in the change's own transaction (or on the database, for changes without one). */
  inTransaction(listener: TransactionListener): void {
    this.#listeners.inTransaction.push(listener);
  }

  /**
   * A listener told once per change made with `change`, at the end of its transaction, of every
   * event it announced: it answers the writes to make after every other write and lock of the
   * change (the audit row, a revocation receipt, the listing counter), which storage runs in its
   * own fixed order (src/storage/closing-writes.ts). Not told of events recorded outside a change.
   * Told again when a change runs again (a lost connection), or when a change tried in one
   * statement gave up and is made in a transaction: what it answered for a try that did not
   * commit is never written.
   */
  closing(listener: ClosingListener): void {
    this.#listeners.closing.push(listener);
  }

  /** A listener told once the change is durable. */
  afterCommit(listener: CommitListener): void {
    this.#listeners.afterCommit.push(listener);
  }

  /**
   * A listener told when a change answered as failed (its COMMIT got no answer in time) turns
   * out to have committed, after its events were published: what the call would have done after
   * its commit (a push to the nodes) was never done.
   */
  lateCommit(listener: () => void): void {
    this.#listeners.lateCommit.push(listener);
  }

  /** Resolves once the read backs running behind answered calls have ended (before the database closes). */
  async settled(): Promise<void> {
    while (this.#shared.settling.size > 0) await Promise.allSettled([...this.#shared.settling]);
  }

  /**
   * Called by a use case inside the transaction of the change (or with the database itself):
   * the in-transaction listeners run now, and a failure fails the change.
   */
  async record(db: Db, ...events: readonly PortalEvent[]): Promise<void> {
    await this.recordAll(db, events);
  }

  /**
   * A change that announces one event whose caller may be called off while the approval
   * listeners run (the node asking about an OpenVPN connect stopped waiting for the answer during
   * the connect script, and refused the client). They run first, outside any transaction (a
   * connect script can take seconds); `calledOff` is read after them, then, when one ran,
   * `stillAllowed` is asked (what the event was decided on may have changed meanwhile). When it is
   * aborted, or no longer allowed, nothing is written and the withdrawn listeners are told.
   * Otherwise the event is recorded in a change of its own, all of its listeners' writes or none
   * (a listener that fails leaves no history row open for a session that never was), and published
   * once it committed; when that change surely did not commit, the withdrawn listeners are told
   * too and the error is thrown. `before` answers, read in that change, the events it announces
   * first (the ends of the sessions the event's session follows on its address). Answers whether
   * the event was recorded.
   */
  async changeUnlessCalledOff(
    db: Db,
    event: PortalEvent,
    calledOff: AbortSignal,
    stillAllowed: () => Promise<boolean>,
    before: (trx: Db) => Promise<readonly PortalEvent[]> = async () => [],
  ): Promise<boolean> {
    for (const listener of this.#listeners.approval) await listener(event);
    const allowed = this.#listeners.approval.length === 0 || (await stillAllowed());
    if (calledOff.aborted || !allowed) {
      await this.#withdraw(event);
      return false;
    }
    this.#approved.add(event);
    try {
      await this.change(db, async (trx, announce) => announce(await before(trx), event));
    } catch (error) {
      // A commit whose outcome is unknown may yet have recorded the event: nothing is undone.
      if (!(error instanceof CommitOutcomeUnknown)) await this.#withdraw(event);
      throw error;
    }
    return true;
  }

  async #withdraw(event: PortalEvent): Promise<void> {
    for (const listener of this.#listeners.withdrawn) await listener(event);
  }

  private async recordAll(db: Db, events: readonly PortalEvent[]): Promise<void> {
    for (const event of events) {
      if (this.#approved.has(event)) continue;
      for (const listener of this.#listeners.approval) await listener(event);
    }
    for (const event of events) for (const listener of this.#listeners.inTransaction) await listener(event, db);
  }

  /**
   * Runs a change in one transaction; the events it announces are recorded in that transaction
   * and published once it committed (never when it rolled back). On a view bound to an Admin
   * API call, a change that announced something ends with the call's `admin.call` event.
   */
  async change<T>(db: Db, work: ChangeWork<T>): Promise<T>;
  /**
   * …with a last step: `lastStep` runs after `work`, the `admin.call` event and the closing
   * listeners, and gets the closing writes to run after its own: for a write whose lock every
   * change of its kind queues on (a create's address pool), taken last and held only for the
   * final statement and the commit. What `lastStep` returns is the change's result.
   */
  async change<T, R>(db: Db, work: ChangeWork<T>, lastStep: LastStep<T, R>): Promise<R>;
  async change<T, R>(db: Db, work: ChangeWork<T>, lastStep?: LastStep<T, R>): Promise<T | R> {
    return this.withRetries(db, (marker, attempt) => this.attempt(db, work, lastStep, marker, attempt));
  }

  /**
   * A change made in one statement, which PostgreSQL runs as its own transaction (a create in
   * one round trip): `events` are what it announces should it succeed. The listeners are told of
   * them as in `change`, the in-transaction ones with a transaction that runs no statement
   * (src/storage/no-statements.ts), and `statement` gets the closing writes to make part of it.
   * null, with nothing written and nothing published: the statement gave up (its case was not
   * the one it was built for), or a listener needs a statement of its own; the caller then
   * makes the change with `change`. A lost connection is made good as for `change`; when the
   * statement's answer was lost with it but the change committed, `committedAnswer` reads the
   * answer back.
   */
  async changeInOneStatement<R>(db: Db, events: readonly PortalEvent[], statement: OneStatement<R>): Promise<R | null> {
    return this.withRetries<R | null>(db, (marker, attempt) =>
      this.attemptInOneStatement(events, statement, marker, attempt),
    );
  }

  /**
   * Runs a change's attempts until one commits: again after a lost connection while the outage
   * lasts no longer than `databaseRetryFor` (OutageWindow), and again after the database rolled
   * it back to end a conflict with another transaction (a deadlock, a serialization failure), up
   * to CONFLICT_RERUNS times.
   */
  private async withRetries<R>(
    db: Db,
    runAttempt: (marker: string | null, attempt: ChangeAttempt<R>) => Promise<R>,
  ): Promise<R> {
    const retryForMs = transactionRetryWindow(db);
    const outage = new OutageWindow(retryForMs);
    let conflicts = 0;
    // Doubled after each lost connection only: a conflict's rerun has a short pause of its own.
    let pause = FIRST_RETRY_PAUSE_MS;
    for (;;) {
      const marker = retryForMs > 0 ? newChangeMarkerId() : null;
      const attempt = new ChangeAttempt<R>();
      try {
        const result = await runAttempt(marker, attempt);
        return attempt.gaveUp ? result : this.committed(attempt.announced, result);
      } catch (error) {
        if (isRolledBackForConflict(error) && conflicts < CONFLICT_RERUNS) {
          conflicts += 1;
          this.#logger.warn(
            { err: error, rerun: conflicts },
            'the database rolled a change back to end a conflict with another transaction; it runs again',
          );
          // Apart, so that two changes that met once do not meet again at the same moment.
          await sleep(Math.random() * FIRST_RETRY_PAUSE_MS * conflicts);
          continue;
        }
        if (marker !== null && closedForStaleStatement(error)) {
          // Closed for a statement a migration made stale: the server answered, no outage. At once.
          if (!outage.staleConnection()) throw error;
          this.#logger.warn({ err: error }, `a change's connection was lost before its COMMIT; it runs again`);
          continue;
        }
        if (outage.lost(attempt.began)) pause = FIRST_RETRY_PAUSE_MS;
        if (error instanceof CommitOutcomeUnknown && !isConnectionLost(error.cause) && marker !== null) {
          // No answer in time: the call is not kept waiting a second time.
          this.settleBehindCall(db, marker, attempt.announced, error);
          throw error;
        }
        if (error instanceof CommitOutcomeUnknown && isConnectionLost(error.cause) && marker !== null) {
          const committed = await this.readBack(db, marker, outage.since, retryForMs, error);
          this.#logger.warn(
            { err: error.cause },
            `a change's connection broke after its COMMIT (or its one statement) was sent; read back: it ${committed ? 'committed' : 'did not commit'}`,
          );
          if (committed) {
            const outcome = attempt.outcome ?? (await attempt.committedAnswer?.());
            if (outcome !== undefined) return this.committed(attempt.announced, outcome.value);
            throw error;
          }
          // The server answered the read back: the outage is over, and a later loss is another.
          outage.ended();
          if (!outage.allowsAnother()) throw error;
        } else if (marker === null || !isConnectionLost(error) || !outage.allows(pause)) {
          throw error;
        } else {
          this.#logger.warn({ err: error }, `a change's connection was lost before its COMMIT; it runs again`);
        }
        await sleep(pause);
        pause = Math.min(pause * 2, LONGEST_RETRY_PAUSE_MS);
      }
    }
  }

  /** One try of a change in one statement (changeInOneStatement). */
  private async attemptInOneStatement<R>(
    events: readonly PortalEvent[],
    statement: OneStatement<R>,
    marker: string | null,
    attempt: ChangeAttempt<R | null>,
  ): Promise<R | null> {
    const { announced } = attempt;
    try {
      await withoutStatements(async (trx) => {
        await this.recordAll(trx, events);
        appendAll(announced, events);
        await this.endWithCall(trx, announced);
      });
    } catch (error) {
      if (!(error instanceof StatementNeeded)) throw error;
      attempt.gaveUp = true;
      return null;
    }
    const writes = this.closingWritesOf(announced, marker);
    attempt.committedAnswer = async () => ({ value: await statement.committedAnswer() });
    let result: R | null;
    try {
      result = await statement.run(writes);
    } catch (error) {
      // Sent and not answered: perhaps run and committed, which only the marker tells.
      if (mayHaveCommitted(error)) throw new CommitOutcomeUnknown(error as Error);
      throw error;
    }
    if (result === null) attempt.gaveUp = true;
    else attempt.outcome = { value: result };
    return result;
  }

  /** One run of a change's transaction; what it announced and answered are kept in `attempt` before COMMIT. */
  private async attempt<T, R>(
    db: Db,
    work: ChangeWork<T>,
    lastStep: LastStep<T, R> | undefined,
    marker: string | null,
    attempt: ChangeAttempt<T | R>,
  ): Promise<T | R> {
    const { announced } = attempt;
    return db.transaction().execute(async (trx) => {
      // Its BEGIN was answered: the server was there for this attempt.
      attempt.began = true;
      const value = await work(trx, async (...given) => {
        const events = eventsOf(given);
        // Every listener's work on many events, and the closing writes', comes between statements.
        await allowIdleForRows(trx, announced.length + events.length);
        await this.recordAll(trx, events);
        appendAll(announced, events);
      });
      await this.endWithCall(trx, announced);
      const writes = this.closingWritesOf(announced, marker);
      let result: T | R;
      if (lastStep !== undefined) result = await lastStep(trx, value, writes);
      else {
        await runClosingWrites(trx, writes);
        result = value;
      }
      attempt.outcome = { value: result };
      return result;
    });
  }

  /**
   * Records the `admin.call` event a change that announced `announced` ends with, and adds it:
   * none on the portal's own seam, for a change that announced nothing, or one that has it already.
   */
  private async endWithCall(trx: Transaction<Database>, announced: PortalEvent[]): Promise<void> {
    const call = this.#call;
    const last = announced[announced.length - 1];
    if (call === null || last === undefined || announced.some((event) => event.type === 'admin.call')) return;
    const event: PortalEvent = {
      type: 'admin.call',
      at: last.at,
      call,
      status: call.successStatus,
      detail: null,
      connectionIds: connectionIdsOf(announced),
      ...userOf(announced),
    };
    await this.record(trx, event);
    announced.push(event);
  }

  /** What the closing listeners answer for a change that announced `announced`, and its marker. */
  private closingWritesOf(announced: readonly PortalEvent[], marker: string | null): ClosingWrite[] {
    const writes: ClosingWrite[] =
      announced.length === 0 ? [] : this.#listeners.closing.flatMap((listener) => listener(announced));
    if (marker !== null) writes.push({ kind: 'change-marker', markerId: marker });
    return writes;
  }

  /**
   * Whether the change of `marker` committed, asked on fresh connections until the server
   * answers or the retry window passed (then the change's own failure is thrown: its outcome
   * stays unknown, as a call that answers 503).
   */
  private async readBack(
    db: Db,
    markerId: string,
    started: MonotonicMs,
    retryForMs: number,
    failure: CommitOutcomeUnknown,
  ): Promise<boolean> {
    for (let pause = FIRST_RETRY_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_RETRY_PAUSE_MS)) {
      try {
        return await changeCommitted(db, markerId);
      } catch (error) {
        if (!isConnectionLost(error) || elapsedSince(started) + pause > retryForMs) {
          this.#logger.error(
            { err: error, markerId },
            "a change's COMMIT could not be read back: whether it committed is unknown",
          );
          throw failure;
        }
        await sleep(pause);
      }
    }
  }

  /**
   * Reads back, behind a call already answered as failed, whether its change committed; if it
   * did, publishes its events and tells the `lateCommit` listeners.
   */
  private settleBehindCall(
    db: Db,
    markerId: string,
    announced: readonly PortalEvent[],
    failure: CommitOutcomeUnknown,
  ): void {
    const settling = this.readBack(db, markerId, monotonicNow(), transactionRetryWindow(db), failure)
      .then(
        (committed) => {
          this.#logger.warn(
            { err: failure.cause, markerId },
            `a change's COMMIT (or its one statement) got no answer in time and its call was answered as failed; read back: it ${committed ? 'committed' : 'did not commit, and never will'}`,
          );
          if (!committed) return;
          this.committed(announced, undefined);
          for (const listener of this.#listeners.lateCommit) listener();
        },
        // readBack logged why it could not tell.
        () => {},
      )
      .finally(() => this.#shared.settling.delete(settling));
    this.#shared.settling.add(settling);
  }

  private committed<V>(announced: readonly PortalEvent[], result: V): V {
    if (announced.some((event) => event.type === 'admin.call')) this.#changesRecorded++;
    this.publishAll(announced);
    return result;
  }

  /** Called by a use case once the change committed (events without a transaction come only here). */
  publish(...events: readonly PortalEvent[]): void {
    this.publishAll(events);
  }

  private publishAll(events: readonly PortalEvent[]): void {
    for (const event of events) {
      for (const listener of this.#listeners.afterCommit) {
        void Promise.resolve()
          .then(() => listener(event))
          .catch((error: unknown) => this.#logger.error({ err: error, event: event.type }, 'an event listener failed'));
      }
    }
  }
}

/** The first pause before a change runs again; doubled up to the next. */
const FIRST_RETRY_PAUSE_MS = 50;
const LONGEST_RETRY_PAUSE_MS = 500;
/**
 * Times a change the database rolled back for a conflict with another transaction runs again
 * (five tries in all, as a create's own retries): the other one has usually committed by then.
 */
const CONFLICT_RERUNS = 4;

/** What one run of a change announced, and what it answered if it got as far as its COMMIT. */
class ChangeAttempt<V> {
  readonly announced: PortalEvent[] = [];
  outcome: { readonly value: V } | undefined = undefined;
  /** A change in one statement: its answer, read back once it is known to have committed. */
  committedAnswer: (() => Promise<{ readonly value: V }>) | undefined = undefined;
  /** A change in one statement that gave up: it wrote nothing, and nothing is published. */
  gaveUp = false;
  /** The server answered this attempt's BEGIN: a connection lost after it is a new outage. */
  began = false;
}

/** A change made in one statement (PortalEvents.changeInOneStatement). */
export interface OneStatement<R> {
  /** Runs the statement, with the change's closing writes in it; null: it gave up and wrote nothing. */
  readonly run: (closingWrites: readonly ClosingWrite[]) => Promise<R | null>;
  /** The answer of a statement that committed but whose answer was lost with its connection. */
  readonly committedAnswer: () => Promise<R>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * How a change announces its events: one by one, or as lists. A revocation of a user with more
 * configurations than a call takes arguments (about 125,000) passes its events as a list: they
 * are never spread into a call.
 */
export type Announce = (...events: readonly (PortalEvent | readonly PortalEvent[])[]) => Promise<void>;

type ChangeWork<T> = (trx: Transaction<Database>, announce: Announce) => Promise<T>;

/** The events given to `announce`, in order, lists opened. */
function eventsOf(given: readonly (PortalEvent | readonly PortalEvent[])[]): PortalEvent[] {
  const events: PortalEvent[] = [];
  for (const item of given) {
    if (isEventList(item)) appendAll(events, item);
    else events.push(item);
  }
  return events;
}

function isEventList(item: PortalEvent | readonly PortalEvent[]): item is readonly PortalEvent[] {
  return Array.isArray(item);
}

/** The one user a change's device events are about (retire_device names only the device), for its audit row. */
function userOf(events: readonly PortalEvent[]): { userId?: UserId } {
  const users = new Set(
    events.flatMap((event) => {
      if ('device' in event) return [event.device.userId];
      if (event.type === 'legal_hold.created' || event.type === 'legal_hold.released') return [event.userId];
      return [];
    }),
  );
  const [only] = users;
  return users.size === 1 && only !== undefined ? { userId: only } : {};
}

/** The configurations a change created, extended, deleted or expired, each once, in the order announced. */
function connectionIdsOf(events: readonly PortalEvent[]): string[] {
  const ids = new Set<string>();
  for (const event of events) {
    if (
      event.type === 'configuration.created' ||
      event.type === 'configuration.extended' ||
      event.type === 'configuration.deleted' ||
      event.type === 'configuration.expired'
    ) {
      ids.add(event.configuration.connectionId);
    }
  }
  return [...ids];
}

export function wireGuardConfiguration(peer: WireGuardPeer): ConfigurationRef {
  return {
    userId: peer.userId,
    profileId: peer.profileId,
    connectionId: peer.publicKey,
    vpnProto: 'wireguard',
    nodeNumber: peer.nodeNumber,
  };
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

/** The configuration.deleted events of one revocation: every peer and certificate it deleted. */
export function configurationsDeleted(
  peers: readonly WireGuardPeer[],
  certificates: readonly OpenVpnCertificate[],
  at: Date,
  revocationId: RevocationId,
): PortalEvent[] {
  return [
    ...peers.map(
      (peer): PortalEvent => ({
        type: 'configuration.deleted',
        at,
        configuration: wireGuardConfiguration(peer),
        revocationId,
      }),
    ),
    ...certificates.map(
      (certificate): PortalEvent => ({
        type: 'configuration.deleted',
        at,
        configuration: openVpnConfiguration(certificate),
        revocationId,
      }),
    ),
  ];
}
