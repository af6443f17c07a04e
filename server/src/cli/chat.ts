// `npm run agents -- chat SLUG`: a conversation with an agent on a running server, at the
// prompt. Options come numbered (a number picks one); after each reply a dim line gives the
// capability, phase, routing confidence and status. /new starts over, /history and /audit show
// the conversation, /quit leaves.
import { createInterface } from 'node:readline/promises';
import { styleText } from 'node:util';
import type { ConverseResponse, Option } from '@switchboard/contract';
import { describeFailure, reach, remoteClient, type RemoteOptions } from './remote.js';

const HELP = 'Type a message, a number to pick an option, or /new, /history, /audit, /quit.';

export async function chat(slug: string, o: RemoteOptions & { user?: string }): Promise<void> {
  const sb = remoteClient(o);
  const agent = await reach(o, () => sb.api.getAgent({ params: { slug } }));
  if (agent.status !== 200) throw new Error(describeFailure(o, agent.status, agent.body));
  const dim = (s: string) => (process.stdout.isTTY ? styleText('dim', s) : s);
  console.log(`${agent.body.name} (${slug}, version ${agent.body.version}) on ${o.url}. ${HELP}`);

  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  let conversation: string | undefined;
  let options: Option[] = [];

  const headers = o.user ? { 'user-id': o.user } : undefined;
  const send = async (message: string) => {
    const r = await reach(o, () =>
      sb.api.converse({ params: { slug }, body: { message, ...(conversation ? { conversation_id: conversation } : {}) }, ...(headers ? { headers } : {}) }),
    );
    if (r.status !== 200) {
      console.log(describeFailure(o, r.status, r.body));
      return;
    }
    const body: ConverseResponse = r.body;
    conversation = body.conversation_id;
    options = body.response.options;
    console.log(body.response.message);
    options.forEach((opt, i) => console.log(`  ${i + 1}. ${opt.label}`));
    // This turn's routing decision, when the key may read the audit log: none when the message
    // answered the phase the conversation waited on.
    let confidence = '—';
    const audit = await sb.api.getAuditLogs({ params: { slug, id: conversation }, query: { limit: 500 } }).catch(() => null);
    if (audit?.status === 200) {
      const entries = audit.body.data;
      const turn = entries.findLast((e) => e.type === 'turn_timing')?.turn_index;
      const decision = entries.findLast((e) => e.type === 'routing_decision' && e.turn_index === turn);
      confidence = decision?.type === 'routing_decision' ? decision.data.selected.score.toFixed(2) : 'n/a (answered the question)';
    }
    console.log(
      dim(
        `[${body.state.capability} · ${body.response.phase} · confidence ${confidence} · ${body.state.status}${body.response.awaiting_input ? '' : ' · not waiting'}]`,
      ),
    );
    if (body.state.status === 'completed' || body.state.status === 'abandoned') console.log(dim('The conversation is closed: /new starts another.'));
  };

  const history = async () => {
    if (!conversation) {
      console.log(dim('No conversation yet.'));
      return;
    }
    const id = conversation;
    const h = await reach(o, () => sb.api.getHistory({ params: { slug, id } }));
    if (h.status !== 200) console.log(describeFailure(o, h.status, h.body));
    else for (const t of h.body.turns) console.log(`${t.role.padEnd(8)} ${t.message}`);
  };
  const audit = async () => {
    if (!conversation) {
      console.log(dim('No conversation yet.'));
      return;
    }
    const id = conversation;
    const a = await reach(o, () => sb.api.getAuditLogs({ params: { slug, id }, query: { limit: 500 } }));
    if (a.status !== 200) console.log(describeFailure(o, a.status, a.body));
    else for (const e of a.body.data) console.log(`${String(e.sequence).padStart(4)} ${e.type.padEnd(17)} ${JSON.stringify(e.data).slice(0, 160)}`);
  };

  /** Runs a slash command; true when it ends the chat. */
  const command = async (name: string): Promise<boolean> => {
    switch (name) {
      case '/quit':
        return true;
      case '/new':
        conversation = undefined;
        options = [];
        console.log(dim('A new conversation starts with your next message.'));
        break;
      case '/history':
        await history();
        break;
      case '/audit':
        await audit();
        break;
      default:
        console.log(dim(HELP));
    }
    return false;
  };

  try {
    for (;;) {
      let line: string;
      try {
        line = (await rl.question('> ')).trim();
      } catch {
        break; // input closed (Ctrl-D)
      }
      if (!line) continue;
      if (line.startsWith('/')) {
        if (await command(line.split(/\s+/)[0])) break;
        continue;
      }
      const n = /^\d+$/.test(line) ? Number(line) : 0;
      await send(n >= 1 && n <= options.length ? options[n - 1].value : line);
    }
  } finally {
    rl.close();
  }
}
