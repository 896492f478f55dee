// Time as the portal stores and shows it: UTC, second precision, numeric offset
// (`2027-02-20T10:11:12+00:00`, PHP's "ATOM"). Such strings sort chronologically,
// so the database can compare them as text on every dialect.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export function formatAtom(date: Date): string {
  return `${date.toISOString().slice(0, 19)}+00:00`;
}

/** RFC 7231 IMF-fixdate, as used by the `Expires` header. */
export function formatHttpDate(date: Date): string {
  return date.toUTCString();
}
