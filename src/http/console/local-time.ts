// Times typed into the console's search forms: an administrator types `2026-11-28 07:30` in
// their own time zone, as a clock on the wall shows it, not ISO 8601 in UTC. The console's
// script names the browser's zone in a hidden `tz` field; the server turns a time without an
// offset into UTC in that zone (UTC without the script) and the page shows the conversion, so
// nobody searches the wrong hour unknowingly. A time with an offset or `Z` is taken as it is.

/** A time as typed, and what the search used. */
export interface ConsoleTime {
  /** What goes to the Admin API: the typed text when it had an offset, else the UTC moment (ISO 8601, `Z`). */
  readonly value: string;
  /** Set when the text had no offset: the zone it was read in, for the page to show. */
  readonly readIn: string | null;
}

const WALL_CLOCK = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;

/** The IANA zone the browser named, if this runtime knows it; else UTC. */
export function knownZone(zone: string | undefined): string {
  if (zone === undefined || zone === '' || zone.length > 64) return 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone;
  } catch {
    return 'UTC';
  }
}

/** A typed time; text that is no wall-clock time is passed on for the Admin API to judge (and refuse). */
export function readConsoleTime(text: string, zone: string): ConsoleTime {
  const trimmed = text.trim();
  const match = WALL_CLOCK.exec(trimmed);
  if (match === null) return { value: trimmed, readIn: null };
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => Number(part ?? '0')) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls a field over (30 February is 2 March, 24:30 the next day): such a time is no
  // time on any clock, and goes to the Admin API as typed, to be refused.
  const read = new Date(wall);
  const fields = [read.getUTCFullYear(), read.getUTCMonth() + 1, read.getUTCDate(), read.getUTCHours()];
  if (fields.join() !== [year, month, day, hour].join() || minute > 59 || second > 59)
    return { value: trimmed, readIn: null };
  // The zone's offset at the moment that wall time names: guess with the offset at the wall time
  // read as UTC, then correct once with the offset at the guess (enough across a DST change).
  let moment = wall - offsetMs(wall, zone);
  moment = wall - offsetMs(moment, zone);
  return { value: new Date(moment).toISOString().replace(/\.000Z$/, 'Z'), readIn: zone };
}

/** How far `zone`'s wall clock is ahead of UTC at `instant`. */
function offsetMs(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant));
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((entry) => entry.type === type)?.value);
  const asUtc = Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second'));
  return asUtc - Math.floor(instant / 1000) * 1000;
}
