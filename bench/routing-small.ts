// The small-agent benchmark of `npm run bench:routing`: agents as people write them — six
// capabilities of eight examples each and a fallback with none — built from CLINC150's training
// split, one per domain, and evaluated on its validation split: in-scope messages are the six
// intents' validation utterances; out-of-scope messages are the out-of-scope validation split
// plus the validation utterances of the other nine domains.
import { compileAgent, validateDefinition } from '../server/src/engine/compile.js';
import type { VectorsStatus } from '../server/src/engine/word-vectors.js';
import { route } from '../server/src/engine/run.js';
import { AgentDefinition } from '@switchboard/contract';

/**
 * CLINC150's ten domains (Larson et al., 2019, the data set's domain list), each with its 15
 * intents; the data files here carry intents only.
 */
const DOMAINS: Record<string, string[]> = {
  banking: [
    'transfer',
    'transactions',
    'balance',
    'freeze_account',
    'pay_bill',
    'bill_balance',
    'bill_due',
    'interest_rate',
    'routing',
    'min_payment',
    'order_checks',
    'pin_change',
    'report_fraud',
    'account_blocked',
    'spending_history',
  ],
  credit_cards: [
    'credit_score',
    'report_lost_card',
    'credit_limit',
    'rewards_balance',
    'new_card',
    'application_status',
    'card_declined',
    'international_fees',
    'apr',
    'redeem_rewards',
    'credit_limit_change',
    'damaged_card',
    'replacement_card_duration',
    'improve_credit_score',
    'expiration_date',
  ],
  kitchen_and_dining: [
    'recipe',
    'restaurant_reviews',
    'calories',
    'nutrition_info',
    'restaurant_suggestion',
    'ingredients_list',
    'ingredient_substitution',
    'cook_time',
    'food_last',
    'meal_suggestion',
    'restaurant_reservation',
    'confirm_reservation',
    'how_busy',
    'cancel_reservation',
    'accept_reservations',
  ],
  home: [
    'shopping_list',
    'shopping_list_update',
    'next_song',
    'play_music',
    'update_playlist',
    'todo_list',
    'todo_list_update',
    'calendar',
    'calendar_update',
    'what_song',
    'order',
    'order_status',
    'reminder',
    'reminder_update',
    'smart_home',
  ],
  auto_and_commute: [
    'traffic',
    'directions',
    'gas',
    'gas_type',
    'distance',
    'current_location',
    'mpg',
    'oil_change_when',
    'oil_change_how',
    'jump_start',
    'uber',
    'schedule_maintenance',
    'last_maintenance',
    'tire_pressure',
    'tire_change',
  ],
  travel: [
    'book_flight',
    'book_hotel',
    'car_rental',
    'travel_suggestion',
    'travel_alert',
    'travel_notification',
    'carry_on',
    'timezone',
    'vaccines',
    'translate',
    'flight_status',
    'international_visa',
    'lost_luggage',
    'plug_type',
    'exchange_rate',
  ],
  utility: [
    'time',
    'alarm',
    'share_location',
    'find_phone',
    'weather',
    'text',
    'spelling',
    'make_call',
    'timer',
    'date',
    'calculator',
    'measurement_conversion',
    'flip_coin',
    'roll_dice',
    'definition',
  ],
  work: [
    'direct_deposit',
    'pto_request',
    'taxes',
    'payday',
    'w2',
    'pto_balance',
    'pto_request_status',
    'next_holiday',
    'insurance',
    'insurance_change',
    'schedule_meeting',
    'pto_used',
    'meeting_schedule',
    'rollover_401k',
    'income',
  ],
  small_talk: [
    'greeting',
    'goodbye',
    'tell_joke',
    'where_are_you_from',
    'how_old_are_you',
    'what_is_your_name',
    'who_made_you',
    'thank_you',
    'what_can_i_ask_you',
    'what_are_your_hobbies',
    'do_you_have_pets',
    'are_you_a_bot',
    'meaning_of_life',
    'who_do_you_work_for',
    'fun_fact',
  ],
  meta: [
    'change_ai_name',
    'change_user_name',
    'cancel',
    'user_name',
    'reset_settings',
    'whisper_mode',
    'repeat',
    'no',
    'yes',
    'maybe',
    'change_language',
    'change_accent',
    'change_volume',
    'change_speed',
    'sync_device',
  ],
};

/** The domains an agent is built from: the task-oriented ones (small talk and meta are what the others' users say besides). */
const AGENT_DOMAINS = ['banking', 'credit_cards', 'kitchen_and_dining', 'home', 'auto_and_commute', 'travel', 'utility', 'work'];
const INTENTS = 6;
const EXAMPLES = 8;

export interface SmallAgentResult {
  domain: string;
  inScope: number;
  oosRecall: number;
  /** In-scope messages whose right capability the router scored best, before any out-of-scope rule. */
  topScored: number;
}

type Pairs = [string, string][];

/** Runs the benchmark; `train`/`val`/`oosVal` are CLINC150's files; the agents route with `words`. */
export async function smallAgents(
  train: Pairs,
  val: Pairs,
  oosVal: Pairs,
  words: VectorsStatus,
): Promise<{ rows: SmallAgentResult[]; inScope: number; oosRecall: number; topScored: number }> {
  const all = Object.values(DOMAINS).flat();
  if (all.length !== 150 || new Set(all).size !== 150) throw new Error('the domain list does not hold 150 distinct intents');
  const byIntent = new Map<string, string[]>();
  for (const [u, i] of train) (byIntent.get(i) ?? byIntent.set(i, []).get(i)!).push(u);
  const rows: SmallAgentResult[] = [];
  let inRight = 0;
  let inTotal = 0;
  let oosRight = 0;
  let oosTotal = 0;
  let topRight = 0;
  for (const domain of AGENT_DOMAINS) {
    const intents = DOMAINS[domain].slice(0, INTENTS);
    const definition = AgentDefinition.parse({
      name: domain,
      routing: { fallback: 'fallback' },
      capabilities: [
        ...intents.map((name) => ({ name, examples: byIntent.get(name)!.slice(0, EXAMPLES), phases: [{ id: 'a', say: name }] })),
        { name: 'fallback', phases: [{ id: 'f', say: 'Sorry?' }] },
      ],
    });
    const problems = validateDefinition(definition);
    if (problems.length) throw new Error(JSON.stringify(problems));
    const agent = await compileAgent('00000000-0000-4000-8000-000000000001', 1, definition, undefined, words);
    const routeOf = (m: string) => route(agent, agent.router.score(m), null).capability.name;
    const inScope = val.filter(([, i]) => intents.includes(i));
    const others = val.filter(([, i]) => !DOMAINS[domain].includes(i));
    const outOfScope = [...oosVal, ...others];
    const a = inScope.filter(([u, i]) => routeOf(u) === i).length;
    const o = outOfScope.filter(([u]) => routeOf(u) === 'fallback').length;
    const top = inScope.filter(([u, i]) => agent.router.score(u).scores[0]?.name === i).length;
    topRight += top;
    rows.push({ domain, inScope: a / inScope.length, oosRecall: o / outOfScope.length, topScored: top / inScope.length });
    inRight += a;
    inTotal += inScope.length;
    oosRight += o;
    oosTotal += outOfScope.length;
  }
  return { rows, inScope: inRight / inTotal, oosRecall: oosRight / oosTotal, topScored: topRight / inTotal };
}
