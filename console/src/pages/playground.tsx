// The playground: a real conversation with any stored version (drafts too), its reply streamed as
// it is written, and per turn the capability, phase, routing confidence and status. "Save as test"
// writes the conversation as a test file, with the actions' and the model's recorded answers, so
// that `npm run agents -- test` replays it with nothing going out.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { stringify } from 'yaml';
import type { Agent, AuditEntry, ConverseResponse, Option } from '@switchboard/client';
import { asApiError, ok, type ApiError } from '../api';
import { useSession } from '../session';
import { ErrorBox, StatusBadge } from '../components/ui';
import { useVersions, VersionSelect } from '../components/versions';
import { auditOf } from './conversation';

interface Exchange {
  user: string;
  reply: string;
  done: ConverseResponse | null;
  confidence: string | null;
}

/** The test file of a conversation: its user messages with what came back, and the answers it got. */
function testFile(slug: string, exchanges: Exchange[], entries: AuditEntry[], userId: string): string {
  const actions: Record<string, { status: number; body?: unknown }> = {};
  const llm: { text?: string; tool_calls?: { name: string; arguments: Record<string, unknown> }[] }[] = [];
  for (const e of entries) {
    // The first answer each action gave: a test gives one answer per action.
    if (e.type === 'action_call' && e.data.response && !(e.data.action in actions)) {
      actions[e.data.action] = { status: e.data.response.status, body: e.data.response.body };
    }
    if (e.type === 'llm_call') {
      llm.push({
        ...(e.data.text ? { text: e.data.text } : {}),
        ...(e.data.tool_calls.length
          ? { tool_calls: e.data.tool_calls.map((t) => ({ name: t.name, arguments: (t.arguments ?? {}) as Record<string, unknown> })) }
          : {}),
      });
    }
  }
  const steps = exchanges
    .filter((x) => x.done)
    .map((x) => ({
      user: x.user,
      expect: {
        capability: x.done!.state.capability,
        phase: x.done!.response.phase,
        status: x.done!.state.status,
        awaiting_input: x.done!.response.awaiting_input,
        ...(x.done!.response.message ? { reply: x.done!.response.message.slice(0, 2000) } : {}),
      },
    }));
  const test = {
    name: `playground ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`,
    context: { identity: { user_id: userId } },
    ...(Object.keys(actions).length ? { actions } : {}),
    ...(llm.length ? { llm } : {}),
    steps,
  };
  return `# Saved from the console's playground: run it with npm run agents -- test ${slug}.test.yaml\n${stringify({ agent: slug, tests: [test] })}`;
}

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/yaml' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function Playground({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const versions = useVersions(agent.slug);
  const [version, setVersion] = useState(agent.version);
  const [userId, setUserId] = useState('playground');
  const [conversationId, setConversationId] = useState<string | null>(null);
  const [exchanges, setExchanges] = useState<Exchange[]>([]);
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const log = useRef<HTMLOListElement>(null);

  useEffect(() => log.current?.lastElementChild?.scrollIntoView({ block: 'nearest' }), [exchanges]);

  function restart() {
    setConversationId(null);
    setExchanges([]);
    setError(null);
    input.current?.focus();
  }

  async function send(text: string) {
    const user = text.trim();
    if (!user || busy) return;
    setBusy(true);
    setError(null);
    setMessage('');
    const index = exchanges.length;
    const update = (f: (x: Exchange) => Exchange) => setExchanges((xs) => xs.map((x, i) => (i === index ? f(x) : x)));
    setExchanges((xs) => [...xs, { user, reply: '', done: null, confidence: null }]);
    try {
      let done: ConverseResponse | null = null;
      const body = {
        message: user,
        ...(conversationId ? { conversation_id: conversationId } : { version }),
        context: { version: 'v1' as const, context: { identity: { user_id: userId } } },
      };
      for await (const e of client.converseStream(agent.slug, body)) {
        if (e.type === 'delta') update((x) => ({ ...x, reply: x.reply + e.text }));
        else done = e.response;
      }
      const r = done!;
      setConversationId(r.conversation_id);
      update((x) => ({ ...x, reply: r.response.message, done: r }));
      // The routing confidence of this turn, from the audit log.
      const audit = ok(await client.api.getAuditLogs({ params: { slug: agent.slug, id: r.conversation_id }, query: { type: 'routing_decision', limit: 500 } }));
      const decision = audit.data.at(-1);
      const confidence =
        decision?.type === 'routing_decision' && decision.turn_index === index * 2 ? decision.data.selected.score.toFixed(2) : 'kept (no routing this turn)';
      update((x) => ({ ...x, confidence }));
    } catch (err) {
      setError(asApiError(err));
      setExchanges((xs) => (xs[index]?.done ? xs : xs.slice(0, index)));
      setMessage(user);
    } finally {
      setBusy(false);
      input.current?.focus();
    }
  }

  async function saveAsTest() {
    try {
      const entries = await auditOf(client, agent.slug, conversationId!);
      download(`${agent.slug}.test.yaml`, testFile(agent.slug, exchanges, entries, userId));
    } catch (err) {
      setError(asApiError(err));
    }
  }

  const last = exchanges.at(-1)?.done ?? null;
  const closed = last && (last.state.status === 'completed' || last.state.status === 'abandoned');
  const options: Option[] = last?.response.options ?? [];
  return (
    <div>
      <h2>Playground</h2>
      <div class="row">
        <label class="inline">
          Version <VersionSelect agent={agent} versions={versions.data} value={version} disabled={conversationId !== null} onChange={setVersion} />
        </label>
        <label class="inline">
          User id <input value={userId} maxLength={256} disabled={conversationId !== null} onInput={(e) => setUserId(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={restart} disabled={busy || exchanges.length === 0}>
          New conversation
        </button>
        <button type="button" onClick={() => void saveAsTest()} disabled={busy || !conversationId}>
          Save as test
        </button>
        {conversationId && (
          <Link href={`/conversations/${conversationId}`} class="small">
            Open its audit timeline
          </Link>
        )}
      </div>
      <p class="muted small">
        A real conversation on the chosen version: its actions are called and it is stored like any other. Choosing a version other than the current one needs
        an admin key in api_key mode.
      </p>
      {versions.error && <ErrorBox error={versions.error} retry={versions.reload} />}
      <ol class="chat" ref={log} aria-live="polite" aria-label="Conversation">
        {exchanges.length === 0 && <li class="muted">Say something to the agent to start.</li>}
        {exchanges.map((x, i) => (
          <li key={i} class="exchange">
            <div class="turn user">
              <div class="who small">You</div>
              <div class="text">{x.user}</div>
            </div>
            <div class="turn agent" aria-busy={!x.done}>
              <div class="who small">Agent</div>
              <div class="text">{x.reply || (x.done ? '' : '…')}</div>
              {x.done && (
                <div class="turn-facts small" data-testid="turn-facts">
                  <span>capability {x.done.state.capability}</span> · <span>phase {x.done.response.phase}</span> · <span>confidence {x.confidence ?? '…'}</span>{' '}
                  · <StatusBadge status={x.done.state.status} />
                </div>
              )}
            </div>
          </li>
        ))}
      </ol>
      {error && <ErrorBox error={error} />}
      {options.length > 0 && !closed && (
        <div class="row" role="group" aria-label="Options">
          {options.map((o) => (
            <button key={o.value} type="button" disabled={busy} onClick={() => void send(o.value)}>
              {o.label}
            </button>
          ))}
        </div>
      )}
      {closed ? (
        <p class="notice">
          The conversation is {last.state.status}.{' '}
          <button type="button" onClick={restart}>
            Start a new one
          </button>
        </p>
      ) : (
        <form
          class="row send"
          onSubmit={(e) => {
            e.preventDefault();
            void send(message);
          }}
        >
          <label class="grow">
            <span class="sr-only">Message</span>
            <input
              ref={input}
              name="message"
              value={message}
              placeholder="Type a message"
              maxLength={4000}
              autoComplete="off"
              onInput={(e) => setMessage(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy || !message.trim()}>
            Send
          </button>
        </form>
      )}
    </div>
  );
}
