// Dates in slot answers: natural and relative dates, read in the conversation's language and
// resolved in the user's time zone (the context's, else the agent's, else UTC).
import { describe, expect, it } from 'vitest';
import { findDates, isTimeZone } from '../../server/src/engine/dates.js';
import { parseSlot } from '../../server/src/engine/slots.js';
import { compileAgent, validateDefinition } from '../../server/src/engine/compile.js';
import { AgentDefinition, type AgentDefinitionInput } from '@switchboard/contract';
import { parseDefinition } from '../helpers/agents.js';
import { driveTurn, priorOf } from '../helpers/engine.js';

async function agentOf(def: AgentDefinitionInput) {
  const parsed = parseDefinition(def);
  expect(validateDefinition(parsed)).toEqual([]);
  return compileAgent('00000000-0000-4000-8000-000000000004', 1, parsed);
}

const after = priorOf;

// A Wednesday, 23:30 UTC: Thursday already in Tokyo, still Wednesday afternoon in Los Angeles.
const NOW = new Date('2026-11-25T23:30:00Z');
const date = (text: string, timeZone = 'UTC', lang = 'en') => {
  const p = parseSlot({ type: 'date' }, text, NOW, { timeZone, lang });
  return p.ok ? p.value : null;
};

describe('dates in answers', () => {
  it('reads relative and natural dates against the user’s calendar day', () => {
    expect(date('today')).toBe('2026-11-25');
    expect(date('tomorrow')).toBe('2026-11-26');
    expect(date('the day after tomorrow')).toBe('2026-11-27');
    expect(date('yesterday')).toBe('2026-11-24');
    expect(date('Friday')).toBe('2026-11-27');
    expect(date('next Friday')).toBe('2026-12-04');
    expect(date('in two weeks')).toBe('2026-12-09');
    expect(date('3 March')).toBe('2027-03-03');
    expect(date('March 3rd')).toBe('2027-03-03');
    expect(date('next friday at 8pm please')).toBe('2026-12-04');
    expect(date('2026-02-28')).toBe('2026-02-28');
  });

  it('resolves them in the user’s time zone, whatever the server’s', () => {
    expect(date('today', 'Asia/Tokyo')).toBe('2026-11-26');
    expect(date('tomorrow', 'Asia/Tokyo')).toBe('2026-11-27');
    expect(date('tomorrow', 'Europe/London')).toBe('2026-11-26');
    expect(date('yesterday', 'America/Los_Angeles')).toBe('2026-11-24');
  });

  it('reads the conversation’s language, and slashes as its region writes them', () => {
    expect(date('mañana', 'UTC', 'es')).toBe('2026-11-26');
    expect(date('el próximo viernes', 'UTC', 'es')).toBe('2026-12-04');
    expect(date('demain', 'UTC', 'fr')).toBe('2026-11-26');
    expect(date('tomorrow', 'UTC', 'de')).toBe('2026-11-26');
    expect(date('12/04/2027')).toBe('2027-12-04');
    expect(date('12/04/2027', 'UTC', 'en-GB')).toBe('2027-04-12');
  });

  it('refuses what names no day, or two', () => {
    for (const text of ['2026-02-30', 'march', 'at 5', 'perhaps', '100001', 'Friday or Saturday', `${'next friday '.repeat(50)}`]) {
      expect(date(text), text).toBeNull();
    }
    // A day past the year 9999 is no calendar's answer (chrono computes year 29405 for this one).
    expect(date('in 9999999 days')).toBeNull();
    expect(findDates('see you in 9999999 days', NOW, { timeZone: 'UTC', lang: 'en' })).toEqual([]);
    // Two mentions of one day are one answer.
    expect(date('tomorrow, so 2026-11-26')).toBe('2026-11-26');
  });

  it('finds where a day is mentioned in a message', () => {
    expect(findDates('a table for four next Friday', NOW, { timeZone: 'UTC', lang: 'en' })).toEqual([{ value: '2026-12-04', start: 17, end: 28 }]);
  });

  it('knows IANA time zones, and refuses an unknown one in a definition', () => {
    expect(isTimeZone('Europe/Lisbon')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    const def = AgentDefinition.parse({
      name: 'x',
      time_zone: 'Mars/Olympus',
      capabilities: [{ name: 'c', examples: ['hi'], phases: [{ id: 'p', say: 'x' }] }],
    });
    expect(validateDefinition(def)).toEqual([{ path: 'time_zone', message: 'unknown time zone "Mars/Olympus": an IANA name such as Europe/Lisbon, or UTC' }]);
  });
});

describe('dates in a conversation', () => {
  const booking = (timeZone?: string) => ({
    name: 'Bookings',
    ...(timeZone ? { time_zone: timeZone } : {}),
    capabilities: [
      {
        name: 'book',
        examples: ['book a table', 'I want a reservation', 'reserve a table'],
        phases: [
          { id: 'ask_day', say: 'Which day?', collect: { slot: 'day', type: 'date' as const } },
          { id: 'ok', say: 'Booked {{ slots.day }}.', end: 'completed' as const },
        ],
      },
      { name: 'hours', examples: ['when are you open', 'opening hours'], phases: [{ id: 'h', say: 'Noon.' }] },
    ],
  });
  const now = '2026-11-25T23:30:00.000Z';
  const context = (time_zone: string) => ({ version: 'v1' as const, context: { preferences: { time_zone } } });

  it('takes the day from the context’s time zone, else the agent’s, else UTC', async () => {
    const utc = await agentOf(booking());
    const r0 = driveTurn(utc, 'book a table', { now }).result;
    expect(driveTurn(utc, 'tomorrow', { now, prior: after(r0), turnIndex: 2 }).result.flow.slots.day).toBe('2026-11-26');
    const tokyo = await agentOf(booking('Asia/Tokyo'));
    const t0 = driveTurn(tokyo, 'book a table', { now }).result;
    expect(driveTurn(tokyo, 'tomorrow', { now, prior: after(t0), turnIndex: 2 }).result.flow.slots.day).toBe('2026-11-27');
    // The user's own zone wins; an unknown one is passed over for the agent's.
    const la = driveTurn(tokyo, 'tomorrow', { now, prior: after(t0), turnIndex: 2, context: context('America/Los_Angeles') }).result;
    expect(la.flow.slots.day).toBe('2026-11-26');
    const unknown = driveTurn(tokyo, 'tomorrow', { now, prior: after(t0), turnIndex: 2, context: context('Mars/Olympus') }).result;
    expect(unknown.flow.slots.day).toBe('2026-11-27');
  });

  it('fills the day from the opening message, several words long', async () => {
    const agent = await agentOf(booking());
    const r = driveTurn(agent, 'book a table for next Friday', { now }).result;
    expect(r.flow.slots.day).toBe('2026-12-04');
    expect(r.reply).toBe('Booked 2026-12-04.');
  });
});
