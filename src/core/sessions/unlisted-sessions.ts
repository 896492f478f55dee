// When each open OpenVPN session was first missing from its node's client list, per node, in
// this instance's memory: a session is ended as lost only once listings a while apart miss it,
// since the node's disconnect report (with the session's counters) of a client the portal has
// just disconnected may be a moment behind the list.
import type { NodeNumber } from '../../shared/ids.js';

export class UnlistedSessions {
  readonly #firstMissed = new Map<NodeNumber, Map<string, Date>>();

  /**
   * Notes which sessions (by key) a listing of `nodeNumber` at `listedAt` missed, forgetting
   * the rest of that node's; answers those missed for `graceMs` or longer, each with when it
   * was first missed (when, at the latest, it ended).
   */
  missedFor(nodeNumber: NodeNumber, missed: readonly string[], listedAt: Date, graceMs: number): Map<string, Date> {
    const before = this.#firstMissed.get(nodeNumber);
    const now = new Map<string, Date>();
    const due = new Map<string, Date>();
    for (const key of missed) {
      const remembered = before?.get(key);
      // A clock set back since the first miss: counted from now, not from a time still to come.
      const since = remembered !== undefined && remembered <= listedAt ? remembered : listedAt;
      now.set(key, since);
      if (listedAt.getTime() - since.getTime() >= graceMs) due.set(key, since);
    }
    if (now.size === 0) this.#firstMissed.delete(nodeNumber);
    else this.#firstMissed.set(nodeNumber, now);
    return due;
  }
}
