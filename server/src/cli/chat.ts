// `npm run agents -- chat SLUG`: a conversation with an agent on a running server, at the
// prompt. Options come numbered (a number picks one); after each reply a dim line gives the
// capability, phase, routing confidence and status. /new starts over, /history and /audit show
// the conversation, /quit leaves. Piped input is a script: every line in order, each sent once
// the reply to the one before has come, ending at the end of input; with --json each turn is one
// JSON object on a line of its own and nothing else is printed to standard output.
import { createInterface } from 'node:readline/promises';
import { styleText } from 'node:util';
import type { ConverseResponse, Option } from '@switchboard/contract';
import type { Command } from 'commander';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

const HELP = 'Type a message, a number to pick an option, or /new, /history, /audit, /quit.';

async function chat(slug: string, o: RemoteOptions & { user?: string; json?: boolean }): Promise<void> {
  const sb = remoteClient(o);
  const agent = await reach(o, () => sb.api.getAgent({ params: { slug } }));
  if (agent.status !== 200) throw new Error(describeFailure(o, agent.status, agent.body));
  const dim = (s: string) => (process.stdout.isTTY ? styleText('dim', s) : s);
  // With --json, standard output carries the turns only; what a person reads goes to stderr.
  const say = o.json ? (s: string) => console.error(s) : (s: string) => console.log(s);
  say(`${agent.body.name} (${slug}, version ${agent.body.version}) on ${o.url}. ${HELP}`);

  const interactive = process.stdin.isTTY && !o.json;
  const rl = createInterface({ input: process.stdin, output: interactive ? process.stdout : undefined, terminal: interactive });
  rl.setPrompt('> ');
  let conversation: string | undefined;
  let options: Option[] = [];
  const script = { failed: false };

  const headers = o.user ? { 'user-id': o.user } : undefined;
  const send = async (message: string) => {
    const r = await reach(o, () =>
      sb.api.converse({ params: { slug }, body: { message, ...(conversation ? { conversation_id: conversation } : {}) }, ...(headers ? { headers } : {}) }),
    );
    if (r.status !== 200) {
      script.failed = true;
      if (o.json) console.log(JSON.stringify({ message, error: r.body }));
      else console.log(describeFailure(o, r.status, r.body));
      return;
    }
    const body: ConverseResponse = r.body;
    conversation = body.conversation_id;
    options = body.response.options;
    if (!o.json) {
      console.log(body.response.message);
      options.forEach((opt, i) => console.log(`  ${i + 1}. ${opt.label}`));
    }
    // This turn's routing decision, when the key may read the audit log: none when the message
    // answered the phase the conversation waited on.
    let confidence = '—';
    let score: number | null = null;
    const audit = await sb.api.getAuditLogs({ params: { slug, id: conversation }, query: { limit: 500 } }).catch(() => null);
    if (audit?.status === 200) {
      const entries = audit.body.data;
      const turn = entries.findLast((e) => e.type === 'turn_timing')?.turn_index;
      const decision = entries.findLast((e) => e.type === 'routing_decision' && e.turn_index === turn);
      if (decision?.type === 'routing_decision') score = decision.data.selected.score;
      confidence = score !== null ? score.toFixed(2) : 'n/a (answered the question)';
    }
    if (o.json) {
      console.log(
        JSON.stringify({
          message,
          conversation_id: body.conversation_id,
          reply: body.response.message,
          options: body.response.options,
          capability: body.state.capability,
          phase: body.response.phase,
          status: body.state.status,
          awaiting_input: body.response.awaiting_input,
          confidence: score,
        }),
      );
      return;
    }
    console.log(
      dim(
        `[${body.state.capability} · ${body.response.phase} · confidence ${confidence} · ${body.state.status}${body.response.awaiting_input ? '' : ' · not waiting'}]`,
      ),
    );
    if (body.state.status === 'completed' || body.state.status === 'abandoned') say(dim('The conversation is closed: /new starts another.'));
  };

  const history = async () => {
    if (!conversation) {
      say(dim('No conversation yet.'));
      return;
    }
    const id = conversation;
    const h = await reach(o, () => sb.api.getHistory({ params: { slug, id } }));
    if (h.status !== 200) say(describeFailure(o, h.status, h.body));
    else for (const t of h.body.turns) say(`${t.role.padEnd(8)} ${t.message}`);
  };
  const audit = async () => {
    if (!conversation) {
      say(dim('No conversation yet.'));
      return;
    }
    const id = conversation;
    const a = await reach(o, () => sb.api.getAuditLogs({ params: { slug, id }, query: { limit: 500 } }));
    if (a.status !== 200) say(describeFailure(o, a.status, a.body));
    else for (const e of a.body.data) say(`${String(e.sequence).padStart(4)} ${e.type.padEnd(17)} ${JSON.stringify(e.data).slice(0, 160)}`);
  };

  /** Runs a slash command; true when it ends the chat. */
  const command = async (name: string): Promise<boolean> => {
    switch (name) {
      case '/quit':
        return true;
      case '/new':
        conversation = undefined;
        options = [];
        say(dim('A new conversation starts with your next message.'));
        break;
      case '/history':
        await history();
        break;
      case '/audit':
        await audit();
        break;
      default:
        say(dim(HELP));
    }
    return false;
  };

  // Lines are read through readline's iterator, which keeps the ones that arrive while a reply is
  // awaited: piped input is answered line by line, in order, to its end (or Ctrl-D at a prompt).
  try {
    if (interactive) rl.prompt();
    for await (const raw of rl) {
      const line = raw.trim();
      // Piped input is not echoed by a terminal: the transcript shows each line as a prompt would.
      if (!interactive && !o.json && line) say(`> ${line}`);
      if (line.startsWith('/')) {
        if (await command(line.split(/\s+/)[0])) break;
      } else if (line) {
        const n = /^\d+$/.test(line) ? Number(line) : 0;
        await send(n >= 1 && n <= options.length ? options[n - 1].value : line);
      }
      if (interactive) rl.prompt();
    }
  } finally {
    rl.close();
  }
  // A script whose messages were refused ends with a failure status.
  if (script.failed && !interactive) process.exitCode = 1;
}

/** chat. */
export function register(cli: Command): void {
  remoteOptions(
    cli
      .command('chat')
      .description('talk to an agent on a running server at the prompt: options by number, a status line per turn, /new /history /audit /quit')
      .argument('<slug>', 'the agent')
      .option('--user <user>', 'the end-user id to send as user-id')
      .option('--json', 'one JSON object per turn on standard output (for scripts: pipe the messages in, one a line)'),
  ).action(async (slug: string, opts: RemoteOptions & { user?: string; json?: boolean }) => {
    await chat(slug, { ...opts, tenant: opts.tenant ?? (opts.key ? undefined : 'demo') });
  });
}
