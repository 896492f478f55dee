// Times typed into the console's search forms: an administrator types `2026-11-28 07:30` in
// their own time zone, as a clock on the wall shows it, not ISO 8601 in UTC. The console's
// script names the browser's zone in a hidden `tz` field; the server turns a time without an
// offset into UTC in that zone (UTC without the script) and the page shows the conversion, so
// nobody searches the wrong hour unknowingly. A time with an offset, `Z`, `UTC` or `GMT` is taken
// as it is (written as the Admin API reads it: `2026-03-01 14:03:07 UTC` as `…T14:03:07Z`). A
// wall time the zone's clocks show twice (the hour a daylight saving time ends) or never (the hour
// they skip) names no single moment: it is refused, asking for the offset, not read as a guess.

/** A time as typed, and what the search used. */
export interface ConsoleTime {
  /** What goes to the Admin API: the typed time with its offset when it had one, else the UTC moment (ISO 8601, `Z`). */
  readonly value: string;
  /** Set when the text had no offset: the zone it was read in, for the page to show. */
  readonly readIn: string | null;
  /** Why the page cannot search it (a wall time shown twice or never in the zone); null when it can. */
  readonly refusal?: string;
}

const WALL_CLOCK = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;
/**
 * A time with its zone as abuse reports and logs write it (`2026-03-01 14:03:07 UTC`,
 * `2026-03-01 14:03:07 +0100`, `…Z`): the date, the time, and `Z`, `UTC`, `GMT` or an offset.
 */
const WITH_ZONE = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)$/i;

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
  const zoned = WITH_ZONE.exec(trimmed);
  // Taken as it is, written as the Admin API reads it: `T`, and `Z` or `+01:00`.
  if (zoned !== null) return { value: `${zoned[1]}T${zoned[2]}${isoOffset(zoned[3] ?? 'Z')}`, readIn: null };
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
  const moments = momentsShowing(wall, zone);
  const [moment] = moments;
  if (moments.length === 1 && moment !== undefined)
    return { value: new Date(moment).toISOString().replace(/\.000Z$/, 'Z'), readIn: zone };
  const example = `${trimmed.replace(' ', 'T')}${moments.length === 0 ? offsetText(offsetMs(wall, zone)) : offsetText(offsetMs(moments[1] ?? wall, zone))}`;
  const refusal =
    moments.length === 0
      ? `${trimmed} does not happen in ${zone}: the clocks skip it; type the time with its offset, as ${example}`
      : `${trimmed} happens twice in ${zone} (at ${moments.map((at) => offsetText(offsetMs(at, zone))).join(' and at ')}): type the time with its offset, as ${example}`;
  return { value: trimmed, readIn: null, refusal };
}

/**
 * The moments at which `zone`'s clocks show the wall time `wall` (read as UTC): one, none in the
 * hour they skip, two in the hour they repeat. Tried with the zone's offsets a day either side.
 */
function momentsShowing(wall: number, zone: string): number[] {
  const offsets = new Set([offsetMs(wall - DAY_MS, zone), offsetMs(wall, zone), offsetMs(wall + DAY_MS, zone)]);
  const moments = new Set<number>();
  for (const offset of offsets) {
    const moment = wall - offset;
    if (moment + offsetMs(moment, zone) === wall) moments.add(moment);
  }
  return [...moments].sort((a, b) => a - b);
}

const DAY_MS = 86_400_000;

/** `Z`, `UTC` or `GMT` as `Z`; `+0100` and `+01` as `+01:00`. */
function isoOffset(zone: string): string {
  if (/^(z|utc|gmt)$/i.test(zone)) return 'Z';
  const digits = zone.slice(1).replace(':', '');
  return `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2) || '00'}`;
}

/** An offset as ISO 8601 writes it: `+02:00`. */
function offsetText(offset: number): string {
  const minutes = Math.abs(offset) / 60_000;
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${offset < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
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
