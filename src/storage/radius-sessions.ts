// Queries on `radius_sessions`: the sessions being accounted for over RADIUS. A row is written with
// the session's Start (in the transaction of `session.started`), moved on by every Interim-Update
// (a conditional update: of several portal instances exactly one queues it) and deleted when the
// Stop is queued (in the transaction of `session.ended`: the session that began when the ended one
// did; the configuration's oldest open one only for an end that does not say which).
// The row's record is the Start, with the latest byte counters a pass observed once there are some
// (WireGuard): the Interim-Updates repeat it.
import { inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import type { RadiusSessionsTable } from './schema.js';

export interface RadiusSession {
  readonly acctSessionId: string;
  readonly connectionId: string;
  readonly nodeNumber: number;
  /** The Start record (JSON, src/protocol/radius.ts), with the latest counters observed (the interims repeat them). */
  readonly startRecord: string;
  readonly startedAt: string;
  readonly nextInterimAt: string;
}

export async function insertRadiusSession(db: Db, session: RadiusSession): Promise<void> {
  await db
    .insertInto('radius_sessions')
    .values({
      acct_session_id: session.acctSessionId,
      connection_id: session.connectionId,
      node_number: session.nodeNumber,
      start_record: session.startRecord,
      started_at: session.startedAt,
      next_interim_at: session.nextInterimAt,
    })
    .execute();
}

/**
 * The oldest open session of a configuration on a node, deleted: its Stop is the caller's to
 * queue. Oldest first because an OpenVPN client that reconnects (to the node's TCP process, say)
 * is connected again before the node reports the end of its first connection; with `only`, the
 * oldest of those it picks (the session that began when the ended one did, on its tunnel
 * address), none when none is.
 */
export async function takeOldestRadiusSession(
  db: Db,
  connectionId: string,
  nodeNumber: number,
  only: (session: RadiusSession) => boolean = () => true,
): Promise<RadiusSession | undefined> {
  const open = (
    await db
      .selectFrom('radius_sessions')
      .selectAll()
      .where('connection_id', '=', connectionId)
      .where('node_number', '=', nodeNumber)
      .orderBy('started_at')
      .orderBy('acct_session_id')
      .execute()
  ).map(toSession);
  // None picked: the session that ended is not accounted for; another one of the configuration is still open.
  const oldest = open.find(only);
  if (oldest === undefined) return undefined;
  const deleted = await db
    .deleteFrom('radius_sessions')
    .where('acct_session_id', '=', oldest.acctSessionId)
    .executeTakeFirst();
  // Another instance's change ended it first (PostgreSQL, read committed): its Stop is queued there.
  return Number(deleted.numDeletedRows) > 0 ? oldest : undefined;
}

/** The open sessions on a node, to note their counters. */
export async function radiusSessionsOnNode(db: Db, nodeNumber: number): Promise<RadiusSession[]> {
  const rows = await db.selectFrom('radius_sessions').selectAll().where('node_number', '=', nodeNumber).execute();
  return rows.map(toSession);
}

/** Replaces a session's record (the Start with newer counters); nothing when its Stop took the row. */
export async function updateRadiusSessionRecord(db: Db, acctSessionId: string, record: string): Promise<void> {
  await db
    .updateTable('radius_sessions')
    .set({ start_record: record })
    .where('acct_session_id', '=', acctSessionId)
    .execute();
}

/**
 * Whether the session still has its row: from the transaction of its Start to that of its Stop
 * (or, for a session whose Stop never came, to the housekeeping that prunes it). A look-up by
 * primary key.
 */
export async function radiusSessionOpen(db: Db, acctSessionId: string): Promise<boolean> {
  const row = await db
    .selectFrom('radius_sessions')
    .select('acct_session_id')
    .where('acct_session_id', '=', acctSessionId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Sessions whose Interim-Update is due at `now`, at most `limit`, the most overdue first. */
export async function dueInterims(db: Db, now: string, limit: number): Promise<RadiusSession[]> {
  const rows = await db
    .selectFrom('radius_sessions')
    .selectAll()
    .where('next_interim_at', '<=', now)
    .orderBy('next_interim_at')
    .limit(limit)
    .execute();
  return rows.map(toSession);
}

/** Moves a session's next interim from `seen` to `next`; false when another instance (or its Stop) was first. */
export async function claimInterim(db: Db, acctSessionId: string, seen: string, next: string): Promise<boolean> {
  const result = await db
    .updateTable('radius_sessions')
    .set({ next_interim_at: next })
    .where('acct_session_id', '=', acctSessionId)
    .where('next_interim_at', '=', seen)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Deletes the rows of sessions that ended before `before` (or are no longer in the history),
 * in batches; says how many. Their Stop was never queued: the session ended while accounting
 * was turned off, so no listener took the row, and left alone it would keep the user and the
 * addresses for good (and a portal with accounting on again would send Interim-Updates for
 * it). A session is its row in the history by configuration, node and start; an open one, or
 * one that ended at or after `before`, keeps its row (its Stop may be on its way).
 */
export async function pruneEndedRadiusSessions(
  db: Db,
  before: string,
  stopping: Stopping = neverStopping,
): Promise<number> {
  const ended = db
    .selectFrom('radius_sessions')
    .select('acct_session_id')
    .where('started_at', '<', before)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('connection_log as session')
            .select('session.log_id')
            .whereRef('session.connection_id', '=', 'radius_sessions.connection_id')
            .whereRef('session.node_number', '=', 'radius_sessions.node_number')
            .whereRef('session.connected_at', '=', 'radius_sessions.started_at')
            .where((inner) =>
              inner.or([inner('session.disconnected_at', 'is', null), inner('session.disconnected_at', '>=', before)]),
            ),
        ),
      ),
    );
  return inBatches(async (limit) => {
    const result = await db
      .deleteFrom('radius_sessions')
      .where('acct_session_id', 'in', ended.limit(limit))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
}

function toSession(row: RadiusSessionsTable): RadiusSession {
  return {
    acctSessionId: row.acct_session_id,
    connectionId: row.connection_id,
    nodeNumber: Number(row.node_number),
    startRecord: row.start_record,
    startedAt: row.started_at,
    nextInterimAt: row.next_interim_at,
  };
}
