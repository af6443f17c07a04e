// Dates in slot answers: ISO dates, and relative or natural ones ("tomorrow", "next Friday", "in
// two weeks", "3 March") read by chrono-node in the conversation's language, resolved against the
// turn's time as a calendar in the user's time zone. chrono resolves against a reference instant
// and offset; it is given the user's wall-clock time as a UTC instant with offset 0, and the
// calendar day is read from its components, so the server's own time zone never enters.
import * as chrono from 'chrono-node';

/** Where "today" is: the user's time zone (IANA) and language. */
export interface DateFrame {
  timeZone: string;
  lang: string;
}

export const UTC_FRAME: DateFrame = { timeZone: 'UTC', lang: 'en' };

/** The years a date answer may name: those of four-digit ISO dates. */
const MIN_YEAR = 1;
const MAX_YEAR = 9999;

/** Text longer than this is not read for dates: a date answer is short, and reading costs CPU. */
const MAX_DATE_TEXT = 500;

/** Whether `tz` names a time zone this runtime knows (IANA names such as Europe/Lisbon, or UTC). */
export function isTimeZone(tz: unknown): boolean {
  if (typeof tz !== 'string' || tz.length === 0 || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const wallClocks = new Map<string, Intl.DateTimeFormat>();

/** `now` as the wall clock of `timeZone` shows it, expressed as the UTC instant with those digits. */
function wallClock(now: Date, timeZone: string): Date {
  let f = wallClocks.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (wallClocks.size < 1000) wallClocks.set(timeZone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(now)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return new Date(Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second));
}

const LOCALES = new Map<string, chrono.Chrono>(
  Object.entries({
    en: chrono.casual,
    'en-gb': chrono.en.GB,
    de: chrono.de.casual,
    es: chrono.es.casual,
    fr: chrono.fr.casual,
    it: chrono.it.casual,
    ja: chrono.ja.casual,
    nl: chrono.nl.casual,
    pt: chrono.pt.casual,
    ru: chrono.ru.casual,
    sv: chrono.sv.casual,
    uk: chrono.uk.casual,
  }),
);

/** The parsers for a language: its own (by full tag, then base), then English. */
function parsersFor(lang: string): chrono.Chrono[] {
  const tag = lang.toLowerCase();
  const own = LOCALES.get(tag) ?? LOCALES.get(tag.split('-')[0]);
  return own && own !== chrono.casual ? [own, chrono.casual] : [chrono.casual];
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * The days a text names, each with where it stands in the text, in the order they appear; only
 * mentions that fix a day (a date, a weekday, "tomorrow", "in two weeks"), not a bare month or
 * time. Future readings are preferred: "Friday" is the coming one, "3 March" the next.
 */
export function findDates(text: string, now: Date, frame: DateFrame): { value: string; start: number; end: number }[] {
  if (text.length > MAX_DATE_TEXT) return [];
  const reference = { instant: wallClock(now, frame.timeZone), timezone: 0 };
  for (const parser of parsersFor(frame.lang)) {
    const found = parser
      .parse(text, reference, { forwardDate: true })
      .filter((r) => r.start.isCertain('day') || r.start.isCertain('weekday'))
      // "in 9999999 days" is a day chrono can compute but no calendar answer names (nor an ISO date holds).
      .filter((r) => {
        const year = r.start.get('year');
        return year !== null && year >= MIN_YEAR && year <= MAX_YEAR;
      })
      .map((r) => ({
        value: `${r.start.get('year')}-${pad(r.start.get('month') ?? 1)}-${pad(r.start.get('day') ?? 1)}`,
        start: r.index,
        end: r.index + r.text.length,
      }));
    if (found.length) return found;
  }
  return [];
}
