// ISO 8601 durations as PHP's DateInterval accepts them (reference §3, §10): `P1Y`, `P90D`,
// `PT12H`, `P2W`, `P1W2D`, and the alternative form `P0001-02-03T04:05:06`. Calendar units
// are added to the UTC calendar, so `P1M` from 31 January overflows into March exactly as
// PHP's DateTime::add does (JavaScript's Date arithmetic has the same overflow rule).

export interface IsoDuration {
  readonly text: string;
  readonly years: number;
  readonly months: number;
  readonly days: number;
  readonly hours: number;
  readonly minutes: number;
  readonly seconds: number;
}

const DESIGNATOR_FORM = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;
const ALTERNATIVE_FORM = /^P(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/;

export function parseIsoDuration(text: string): IsoDuration | null {
  const designator = DESIGNATOR_FORM.exec(text);
  if (designator !== null) {
    const [, y, mo, w, d, h, mi, s] = designator;
    const hasDate = [y, mo, w, d].some((part) => part !== undefined);
    const hasTime = [h, mi, s].some((part) => part !== undefined);
    // `P` alone and a dangling `T` (`P1DT`) are not durations.
    if (!hasDate && !hasTime) return null;
    if (text.includes('T') && !hasTime) return null;
    return {
      text,
      years: toInt(y),
      months: toInt(mo),
      days: toInt(w) * 7 + toInt(d),
      hours: toInt(h),
      minutes: toInt(mi),
      seconds: toInt(s),
    };
  }
  const alternative = ALTERNATIVE_FORM.exec(text);
  if (alternative !== null) {
    const [, y, mo, d, h, mi, s] = alternative;
    return {
      text,
      years: toInt(y),
      months: toInt(mo),
      days: toInt(d),
      hours: toInt(h),
      minutes: toInt(mi),
      seconds: toInt(s),
    };
  }
  return null;
}

export function isIsoDuration(text: string): boolean {
  return parseIsoDuration(text) !== null;
}

/**
 * The longest duration the portal takes from a client or a command: a century. Every end it
 * gives is then a date with a four-digit year, which JavaScript can hold and ATOM can write; a
 * longer one (`P999999999Y`) would be past either.
 */
export const MAX_DURATION = 'P100Y';
const MAX_DURATION_PARSED: IsoDuration = {
  text: MAX_DURATION,
  years: 100,
  months: 0,
  days: 0,
  hours: 0,
  minutes: 0,
  seconds: 0,
};

/** Whether `duration`, added to `start`, ends at an instant no later than MAX_DURATION would. */
export function isWithinMaxDuration(duration: IsoDuration, start: Date = new Date()): boolean {
  const end = addDuration(start, duration).getTime();
  return Number.isFinite(end) && end <= addDuration(start, MAX_DURATION_PARSED).getTime();
}

/** An ISO 8601 duration no longer than MAX_DURATION (see isWithinMaxDuration). */
export function isBoundedIsoDuration(text: string, start: Date = new Date()): boolean {
  const duration = parseIsoDuration(text);
  return duration !== null && isWithinMaxDuration(duration, start);
}

/** `start + duration` on the UTC calendar. */
export function addDuration(start: Date, duration: IsoDuration): Date {
  const result = new Date(start.getTime());
  result.setUTCFullYear(
    result.getUTCFullYear() + duration.years,
    result.getUTCMonth() + duration.months,
    result.getUTCDate() + duration.days,
  );
  result.setUTCHours(
    result.getUTCHours() + duration.hours,
    result.getUTCMinutes() + duration.minutes,
    result.getUTCSeconds() + duration.seconds,
  );
  return result;
}

/** `start - duration` on the UTC calendar (retention: what is older than this goes). */
export function subtractDuration(start: Date, duration: IsoDuration): Date {
  const negated = {
    ...duration,
    years: -duration.years,
    months: -duration.months,
    days: -duration.days,
    hours: -duration.hours,
    minutes: -duration.minutes,
    seconds: -duration.seconds,
  };
  return addDuration(start, negated);
}

/**
 * `end - duration` as a period of months is reckoned in law, for a retention: years and months
 * go back to the same day of the month, or to the last day of a shorter month (31 March less
 * `P1M` is 28 February, not 3 March as subtractDuration's overflow makes it); then days and
 * times go back as they are. What ended before the result is older than `duration` by any
 * reading; subtractDuration's overflow would call a record ended on 2 March older than a month
 * on 31 March.
 */
export function subtractDurationClamped(end: Date, duration: IsoDuration): Date {
  const monthIndex = end.getUTCFullYear() * 12 + end.getUTCMonth() - duration.years * 12 - duration.months;
  const year = Math.floor(monthIndex / 12);
  const month = monthIndex - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const result = new Date(end.getTime());
  result.setUTCFullYear(year, month, Math.min(end.getUTCDate(), lastDay));
  return subtractDuration(result, { ...duration, years: 0, months: 0 });
}

/** Length of a duration in milliseconds when added to `start` (used for intervals such as reconcile). */
export function durationMilliseconds(duration: IsoDuration, start: Date = new Date(0)): number {
  return addDuration(start, duration).getTime() - start.getTime();
}

function toInt(part: string | undefined): number {
  return part === undefined ? 0 : Number.parseInt(part, 10);
}
