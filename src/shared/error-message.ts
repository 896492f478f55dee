// Log fields carry an error's message, whatever was thrown.
/** The message of a thrown value, for log fields. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
