// Log fields and messages carry an error's message, whatever was thrown.
/** The message of a thrown value, for log fields. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Why a fetch() failed, in one line: undici hides the reason (ECONNREFUSED, a timeout, a TLS
 * error) in `cause`. Its terse "bad port" is spelled out: fetch never connects to the ports the
 * Fetch standard blocks (6000, 6665–6669, 10080 and others), whatever is listening there.
 */
export function fetchFailureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const reason = error.cause instanceof Error ? error.cause.message : error.message;
  return reason === 'bad port'
    ? 'bad port (fetch never connects to a port the Fetch standard blocks, such as 6000 or 10080: serve it on another port)'
    : reason;
}
