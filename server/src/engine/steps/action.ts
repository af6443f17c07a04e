// An action call as a step of a turn: rendered, yielded to the caller, and recorded. Shared by
// `call` phases and a generative phase's tools.
import type { ActionResult } from '../../domain.js';
import { SECRET_MASK, type CompiledAction } from '../compile.js';
import { RenderBudgetExceeded, renderJson, type Scope } from '../templates.js';
import type { ActionReply, ActionRequest, EngineReply, EngineRequest, TurnState } from '../turn.js';

function getPath(root: unknown, path: string[]): unknown {
  let cur = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/**
 * Renders an action's request (secrets for the wire, masks for the record), yields it, and
 * records what came back: its audit entry, its result under `actions`, the slots it saves.
 * `args`: a tool call's arguments, readable by the templates.
 */
export function* runAction(t: TurnState, action: CompiledAction, args?: unknown): Generator<EngineRequest, ActionResult, EngineReply> {
  const { input } = t;
  let request: ActionRequest | null = null;
  // A secret the tenant has not been granted reads exactly as one that does not exist.
  const missing = action.secrets.find((n) => !Object.prototype.hasOwnProperty.call(input.secrets, n));
  if (missing !== undefined) {
    t.note('error', { code: 'secret_unavailable', message: `secret "${missing}" is not available to this tenant`, action: action.name });
  } else {
    try {
      const real = Object.fromEntries(action.secrets.map((n) => [n, input.secrets[n]]));
      const masks = Object.fromEntries(action.secrets.map((n) => [n, SECRET_MASK]));
      const render = (sc: Scope) => ({
        url: action.url.render(sc, t.budget),
        headers: Object.fromEntries(action.headers.map(([h, tpl]) => [h, tpl.render(sc, t.budget)])),
        body: action.body ? renderJson(action.body, sc, t.budget) : undefined,
      });
      // Rendered twice: with the secrets for the wire, and with masks in their place for the
      // record, so no filter or echo can carry a secret into an audit entry.
      const wire = render(t.scope(real, args));
      request = {
        kind: 'action',
        action,
        method: action.method,
        ...wire,
        masked: render(t.scope(masks, args)),
        secretValues: Object.values(real),
        ...(args !== undefined ? { via: 'tool' as const } : {}),
      };
    } catch (e) {
      if (e instanceof RenderBudgetExceeded) throw e;
      t.note('error', { code: 'template_error', message: (e as Error).message.split('\n')[0], action: action.name });
    }
  }
  const reply: ActionReply = request
    ? ((yield request) as ActionReply)
    : {
        result: { ok: false, status: 0, body: null },
        audit: {
          type: 'error',
          turnIndex: input.turnIndex,
          timestamp: input.now,
          durationMs: null,
          data: { code: 'action_not_sent', message: `action "${action.name}" could not be rendered`, action: action.name },
        },
      };
  t.audit.push(reply.audit);
  t.flow.actions[action.name] = reply.result;
  if (reply.result.ok) {
    for (const [slot, path] of action.save) {
      const v = getPath(reply.result, path);
      if (v !== undefined) t.flow.slots[slot] = v;
    }
  }
  return reply.result;
}
