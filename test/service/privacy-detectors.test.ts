// The detectors of personal data and the masker, against published test values: the card
// networks' test numbers (as payment providers publish them), the IBAN registry's examples,
// phone numbers in the formats libphonenumber documents; and business identifiers, amounts and
// dates that must be left as typed.
import { describe, expect, it } from 'vitest';
import { detect, PII_TYPES, type PiiType } from '../../server/src/service/privacy/detectors.js';
import { MAX_READ_CHARS, Masker, regionsFor } from '../../server/src/service/privacy/mask.js';
import { privacyProblems } from '../../server/src/service/privacy/policy.js';
import { compileBounded } from '../../server/src/engine/patterns.js';

const ALL = new Set(PII_TYPES);
const REGIONS = ['US', 'GB', 'ES', 'DE'] as const;
const found = (text: string) => detect(text, ALL, [...REGIONS]).map((f) => [f.type, text.slice(f.start, f.end)] as [PiiType, string]);

describe('detectors', () => {
  it('finds the card networks’ test numbers in every common grouping, and no 16 digits that fail Luhn', () => {
    for (const card of [
      '4111111111111111',
      '4111 1111 1111 1111',
      '4111-1111-1111-1111',
      '5555555555554444',
      '5555 5555 5555 4444',
      '378282246310005',
      '3782 822463 10005',
      '6011111111111117',
    ]) {
      expect(found(`paid with ${card} yesterday`), card).toEqual([['card', card]]);
    }
    expect(found('paid with 4111 1111 1111 1112 yesterday')).toEqual([]);
    expect(found('the serial is 1234 5678 9012 3456')).toEqual([]);
  });

  it('finds the IBAN registry’s examples, spaced or not, and not one whose check digits are wrong', () => {
    for (const iban of [
      'DE89370400440532013000',
      'DE89 3704 0044 0532 0130 00',
      'GB82WEST12345698765432',
      'ES91 2100 0418 4502 0005 1332',
      'FR1420041010050500013M02606',
    ]) {
      expect(found(`refund to ${iban} please`), iban).toEqual([['iban', iban]]);
    }
    expect(found('refund to DE88370400440532013000 please')).toEqual([]);
  });

  it('finds e-mail addresses, IP addresses, SSNs and Spanish DNI/NIE by their checks', () => {
    expect(found("write to jane.o'neil+shop@mail.example.co.uk or j@x.io")).toEqual([
      ['email', "jane.o'neil+shop@mail.example.co.uk"],
      ['email', 'j@x.io'],
    ]);
    expect(found('from 192.168.0.12 and 2001:db8::8a2e:370:7334, running v1.2.3.4, not 999.1.1.1')).toEqual([
      ['ip', '192.168.0.12'],
      ['ip', '2001:db8::8a2e:370:7334'],
    ]);
    expect(found('SSN 123-45-6789, not 000-12-3456 nor 666-12-3456')).toEqual([['ssn', '123-45-6789']]);
    expect(found('DNI 12345678Z, NIE X1234567L, not 12345678A')).toEqual([
      ['national_id', '12345678Z'],
      ['national_id', 'X1234567L'],
    ]);
  });

  it('finds phone numbers written internationally and nationally, and leaves business identifiers, amounts and dates', () => {
    expect(found('call +44 20 7946 0958, (415) 555-2671 or my móvil 612 345 678; Handy 0151 23456789')).toEqual([
      ['phone', '+44 20 7946 0958'],
      ['phone', '(415) 555-2671'],
      ['phone', '612 345 678'],
      ['phone', '0151 23456789'],
    ]);
    // A bare run of digits is a phone number only after a phone word, compounds included.
    expect(found('Handynummer 015123456789')).toEqual([['phone', '015123456789']]);
    const kept = [
      'order 100001',
      'order #4455667788',
      'invoice INV-2026-00042',
      'ticket 4455667788',
      'tracking 1Z999AA10123456784',
      'pedido 612345678',
      'Bestellung 4455667788',
      'Rechnung Nr. 2026-4711',
      'SKU 4006381333931',
      // 13 digits that start like a Mastercard and pass Luhn: a Mastercard has 16.
      'SKU 5422529617004',
      'it costs $12,345.67',
      'delivered on 2026-11-28',
      'on 28.11.2026',
      'version 10.4.1',
      'quantity 3',
      // "tel" inside a word is no phone word: a bare number after it stays.
      'Kassenzettel 030901820',
    ];
    for (const text of kept) expect(found(text), text).toEqual([]);
  });

  it('finds names after the words that give them, in three languages, and not the words after them', () => {
    const cases: [string, string][] = [
      ['Hi, my name is Jane Doe and I ordered twice', 'Jane Doe'],
      ['my name is jane doe and i ordered twice', 'jane doe'],
      ["I'm Sarah Connor, order 123456 is late", 'Sarah Connor'],
      ['Me llamo María de la Cruz y vivo en Madrid', 'María de la Cruz'],
      ['Soy Lucía Fernández, cliente desde 2019', 'Lucía Fernández'],
      ['Ich heiße Jan Müller und warte noch', 'Jan Müller'],
      ['Mein Name ist Ludwig van Beethoven', 'Ludwig van Beethoven'],
      ['Thanks, Tom', 'Tom'],
      ['Mit freundlichen Grüßen Anna Schmidt', 'Anna Schmidt'],
    ];
    for (const [text, name] of cases) expect(found(text), text).toEqual([['name', name]]);
    for (const text of ['I am Looking for my parcel', 'I am not happy. This is ridiculous.', 'Thanks, I will wait', 'Soy cliente desde 2019']) {
      expect(found(text), text).toEqual([]);
    }
  });

  it('finds street addresses with a house number, and dates only where they are stated as a birth date', () => {
    const addresses = [
      '221B Baker Street',
      '1600 Pennsylvania Avenue NW',
      '12 High St, Apt 4',
      'Calle Mayor 5, 3º B',
      'C/ Alcalá, 45',
      'Hauptstraße 12a',
      'Musterstr. 5',
      'Berliner Straße 10',
    ];
    for (const a of addresses) expect(found(`send it to ${a} please`), a).toEqual([['address', a]]);
    expect(found('the delivery is on Main Street today')).toEqual([]);
    // libphonenumber would read ", 10" as the number's extension.
    expect(found('call 020 7946 0958, 10 Downing Street')).toEqual([
      ['phone', '020 7946 0958'],
      ['address', '10 Downing Street'],
    ]);
    for (const [text, date] of [
      ['I was born on 12/03/1985', '12/03/1985'],
      ['DOB: March 12, 1985', 'March 12, 1985'],
      ['fecha de nacimiento el 5 de mayo de 1979', '5 de mayo de 1979'],
      ['Geburtsdatum 3. März 1990', '3. März 1990'],
    ]) {
      expect(found(text), text).toEqual([['birth_date', date]]);
    }
    expect(found('delivered on 12/03/2026 to the door')).toEqual([]);
  });
});

describe('the masker', () => {
  const masker = () =>
    new Masker({
      modes: { email: 'redact', card: { keep_last: 4 }, phone: { keep_last: 4 }, iban: 'redact', ip: 'keep' },
      regions: regionsFor(undefined, ['en']),
    });

  it('puts typed placeholders in, keeps what its mode keeps, and counts what it masked', () => {
    const m = masker();
    expect(m.text('card 4111 1111 1111 1111, mail a@b.co, phone +1 415 555 2671, from 10.0.0.1')).toBe(
      'card [CARD …1111], mail [EMAIL], phone [PHONE …2671], from 10.0.0.1',
    );
    expect(m.counts).toEqual({ card: 1, email: 1, phone: 1 });
  });

  it('keeps unread what is past its budget or too long to read, and counts it', () => {
    const spent = new Masker({ modes: { email: 'redact' }, regions: ['US'] }, { budget: { ms: 5, spentMs: 5, unread: 0 } });
    expect(spent.text('mail a@b.co')).toBe('[UNREAD: 11 characters]');
    const long = new Masker({ modes: { email: 'redact' }, regions: ['US'] }, { budget: { ms: 1000, spentMs: 0, unread: 0 } });
    expect(long.text('x'.repeat(MAX_READ_CHARS + 1))).toBe(`[UNREAD: ${MAX_READ_CHARS + 1} characters]`);
    expect(long.text('mail a@b.co')).toBe('mail [EMAIL]');
    expect(long.counts).toEqual({ unread: 1, email: 1 });
  });

  it('reads a percent-encoded value decoded, as an action URL holds it', () => {
    const m = masker();
    expect(m.text('https://crm.example.com/customers?email=jane.doe%40example.com&n=1')).toBe('https://crm.example.com/customers?email=[EMAIL]&n=1');
    expect(m.text('50% off, 100%')).toBe('50% off, 100%');
  });

  it('masks every string of a JSON value and leaves its keys and other values', () => {
    const m = masker();
    expect(m.json({ 'a@b.co': ['x a@b.co', 3, null, { ok: true }] })).toEqual({ 'a@b.co': ['x [EMAIL]', 3, null, { ok: true }] });
  });

  it('hashes a value the same way whatever its case and spacing, and differently under another key', () => {
    const m = (key: Buffer) => new Masker({ modes: { email: 'hash', card: 'hash' }, regions: ['US'], hashKey: key });
    const k = Buffer.alloc(32, 7);
    const a = m(k).text('a Jane.Doe@Example.com b 4111 1111 1111 1111');
    expect(a).toMatch(/^a \[EMAIL #[0-9a-f]{10}\] b \[CARD #[0-9a-f]{10}\]$/);
    expect(m(k).text('a jane.doe@example.com b 4111-1111-1111-1111')).toBe(a);
    expect(m(Buffer.alloc(32, 8)).text('a jane.doe@example.com b 4111-1111-1111-1111')).not.toBe(a);
  });

  it('masks what a policy’s own pattern matches under its name, after the built-in types', () => {
    const m = new Masker({
      modes: { email: 'redact' },
      regions: ['US'],
      custom: [{ name: 'member_id', re: compileBounded('MBR-[0-9]{8}|[a-z]+@'), mode: 'redact' }],
    });
    expect(m.text('😀 MBR-12345678, a@b.co, MBR-1234')).toBe('😀 [MEMBER_ID], [EMAIL], MBR-1234');
    expect(m.counts).toEqual({ email: 1, member_id: 1 });
  });

  it('refuses `hash` where no key exists, and patterns that are not RE2 or past their bounds', () => {
    expect(privacyProblems({ mask: { email: 'hash' } }, 'privacy', false)).toEqual([
      { path: 'privacy.mask', message: '`hash` needs a key, and the operator has not set SECRETS_KEY: use redact or keep_last' },
    ]);
    expect(privacyProblems({ mask: { email: 'hash' } }, 'privacy', true)).toEqual([]);
    const many = Array.from({ length: 20 }, (_, i) => ({ name: `p${i}`, pattern: '[a-z]{200}' }));
    expect(privacyProblems({ mask: {}, custom: many }, 'privacy', true).map((p) => p.path)).toEqual(['privacy.custom']);
  });

  it('reads national phone numbers for the regions of the agent’s languages', () => {
    expect(regionsFor(undefined, ['es', 'en-IE'])).toEqual(['ES', 'MX', 'IE', 'US', 'GB']);
    expect(regionsFor(['DE'], ['en'])).toEqual(['DE']);
  });
});
