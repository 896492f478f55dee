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

/**
 * A day that exists, `YYYY-MM-DD` (Date reads `2026-02-30` as 2 March; `2026-13-01` or
 * `yesterday` is no date at all, whose toISOString would throw).
 */
export function isCalendarDay(text: string): boolean {
  const day = new Date(`${text}T00:00:00Z`);
  return Number.isFinite(day.getTime()) && day.toISOString().startsWith(text);
}

/**
 * A time of a day that exists whose UTC time has a four-digit year: ATOM writes no other, and
 * the database compares times as text (`+010000-…`, past 9999 by an offset, sorts before every
 * time). Hour 24, which Date reads as the next midnight, is no time of the day written: a
 * moment given as `2026-03-01T24:00` would be answered for 2 March.
 */
export function isAtomTime(text: string): boolean {
  const time = Date.parse(text);
  return (
    Number.isFinite(time) &&
    isCalendarDay(text.slice(0, 10)) &&
    text.slice(11, 13) !== '24' &&
    /^\d{4}-/.test(new Date(time).toISOString())
  );
}

/** RFC 7231 IMF-fixdate, as used by the `Expires` header. */
export function formatHttpDate(date: Date): string {
  return date.toUTCString();
}
