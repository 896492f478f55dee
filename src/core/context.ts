// Everything a use case needs, passed in explicitly (no global singletons).
import type { Logger } from 'pino';
import type { PortalConfig } from '../config/portal-config.js';
import type { KeyStore } from '../keys/key-store.js';
import type { OpenVpnKeys } from '../openvpn/openvpn-keys.js';
import type { Db } from '../storage/database.js';
import type { PortalEvents } from './events.js';
import type { ListingCache } from './listings/cache.js';
import type { RecentUsers } from './issuing/recent-users.js';
import type { GroupedConfirmations } from './revocations/grouped-confirmations.js';
import type { UnlistedSessions } from './sessions/unlisted-sessions.js';
import type { NodeFleet } from '../node-client/fleet.js';
import type { Clock } from '../shared/time.js';
import type { AdminCall } from './admin-call.js';

export interface PortalContext {
  readonly config: PortalConfig;
  readonly db: Db;
  readonly keys: KeyStore;
  /** The OpenVPN CA, tls-crypt keys and server certificates (files under the key directory). */
  readonly openVpnKeys: OpenVpnKeys;
  readonly nodes: NodeFleet;
  /** Where core announces what happened (configurations, users, sessions, nodes). */
  readonly events: PortalEvents;
  /** Large listings kept while nothing they show changed (shared by every call of this instance). */
  readonly listings: ListingCache;
  /** The users this instance lately stored configurations for: a create's guess (src/core/issuing/recent-users.ts). */
  readonly recentUsers: RecentUsers;
  /** What the nodes confirmed gone, written for concurrent calls together (src/core/revocations/grouped-confirmations.ts). */
  readonly receiptConfirmations: GroupedConfirmations;
  /** When this instance first found each open OpenVPN session missing from its node's list (src/core/sessions/unlisted-sessions.ts). */
  readonly unlistedSessions: UnlistedSessions;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Source of randomness for shuffling nodes; injectable so tests can pin the order. */
  readonly random: () => number;
  /**
   * The Admin API call this context serves, when it serves one (then `events` is bound to it):
   * who asks, and which profiles the key may touch (src/core/admin-call.ts).
   */
  readonly call?: AdminCall;
}
