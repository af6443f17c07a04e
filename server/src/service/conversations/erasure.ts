// What erasure keeps of a conversation (docs/lifecycle.md, "Erasure and retention"): audit
// entries keep their skeleton — types, times, capabilities, outcomes, status codes — and lose
// request and response bodies, error texts and turn hashes; webhook payloads lose the user id;
// replay results keep their verdicts and lose the texts they compared.
// The store applies these rules; this is where they are decided.
import type { ErasureRules } from '../../domain.js';

export const ERASURE: ErasureRules = {
  auditTypes: ['action_call', 'error', 'turn_timing', 'operator_message', 'slot_filled', 'llm_call', 'context_changed'],
  skeleton(type, data) {
    // Stored audit data: the shapes of contract/src/conversations.ts.
    const d = data as {
      action?: unknown;
      request?: { method?: unknown };
      response?: { status?: unknown } | null;
      outcome?: unknown;
      attempts?: unknown;
      code?: unknown;
    } & Record<string, unknown>;
    switch (type) {
      case 'action_call':
        return {
          action: d.action,
          request: { method: d.request?.method },
          response: d.response ? { status: d.response.status } : null,
          outcome: d.outcome,
          attempts: d.attempts,
          ...(d.via !== undefined ? { via: d.via } : {}),
          erased: true,
        };
      case 'turn_timing':
        return {
          total_ms: d.total_ms,
          routing_ms: d.routing_ms,
          engine_ms: d.engine_ms,
          actions_ms: d.actions_ms,
          ...(d.llm_ms !== undefined ? { llm_ms: d.llm_ms } : {}),
          storage_ms: d.storage_ms,
          erased: true,
        };
      case 'operator_message':
        return { author: 'erased', turns: [], erased: true };
      case 'slot_filled':
        return { slot: d.slot, phase: d.phase, capability: d.capability, source: '', erased: true };
      case 'context_changed':
        return { context: null, erased: true };
      case 'llm_call': {
        // The model's words and the arguments it chose may repeat what the person said.
        const calls = Array.isArray(d.tool_calls) ? (d.tool_calls as { name?: unknown }[]) : [];
        const { text: _text, tool_calls: _calls, grounding, ...rest } = d;
        const g = grounding as { claims?: Record<string, unknown>[] } | undefined;
        const checked = g ? { grounding: { ...g, claims: (g.claims ?? []).map((c) => ({ ...c, sentence: '' })) } } : {};
        return { ...rest, ...checked, text: '', tool_calls: calls.map((c) => ({ name: c.name, arguments: null })), erased: true };
      }
      default:
        return { code: d.code, message: '', erased: true };
    }
  },
  replayResult(r) {
    // The verdict and where the replay differed stay; what was said on either side goes.
    const d = r.first_difference as (Record<string, unknown> & { changes?: { field: string }[] }) | null | undefined;
    if (!d) return { ...r, first_difference: null };
    const changes = d.changes?.map((c) => ({ field: c.field, recorded: null, replayed: null }));
    return {
      ...r,
      first_difference: { ...d, recorded: null, replayed: null, ...(d.message !== undefined ? { message: '' } : {}), ...(changes ? { changes } : {}) },
    };
  },
  webhookPayload(p) {
    const data = p.data as Record<string, unknown> | undefined;
    return data ? { ...p, data: { ...data, user_id: null } } : p;
  },
};
