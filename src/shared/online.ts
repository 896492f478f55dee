// The specification's online rule: a WireGuard connection is online when its last
// handshake is less than 3 minutes old.
export const ONLINE_THRESHOLD_MS = 3 * 60 * 1000;

export function isOnline(lastHandshake: Date | null, now: Date): boolean {
  return lastHandshake !== null && now.getTime() - lastHandshake.getTime() < ONLINE_THRESHOLD_MS;
}
