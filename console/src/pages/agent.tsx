// One agent: its tabs (overview, conversations, review, evaluations, versions, playground, replays,
// tests, install, channels), each its own address under /console/agents/:slug.
import { Link, Route, Switch, useLocation } from 'wouter-preact';
import { ok, useLoad } from '../api';
import { useSession } from '../session';
import { Empty, ErrorBox, Loading } from '../components/ui';
import { Overview } from './overview';
import { Conversations } from './conversations';
import { ConversationView } from './conversation';
import { Versions } from './versions';
import { Playground } from './playground';
import { Replays, ReplayView } from './replays';
import { Tests } from './tests';
import { Review } from './review';
import { EvaluationView, Evaluations } from './evaluations';
import { Install } from './install';
import { Channels } from './channels';

const TABS = [
  ['/', 'Overview'],
  ['/conversations', 'Conversations'],
  ['/review', 'Review'],
  ['/evaluations', 'Evaluations'],
  ['/versions', 'Versions'],
  ['/playground', 'Playground'],
  ['/replays', 'Replays'],
  ['/tests', 'Tests'],
  ['/install', 'Install'],
  ['/channels', 'Channels'],
] as const;

export function AgentPage({ slug }: { slug: string }) {
  const { client } = useSession();
  const [location] = useLocation();
  const agent = useLoad(async () => ok(await client.api.getAgent({ params: { slug } })), [client, slug]);
  if (agent.error) return <ErrorBox error={agent.error} retry={agent.reload} />;
  if (!agent.data) return <Loading what="the agent" />;
  const a = agent.data;
  const current = (path: string) => (path === '/' ? location === '/' : location.startsWith(path));
  return (
    <section>
      <div class="agent-head">
        <h1>{a.name}</h1>
        <span class="muted">
          {a.slug} · current version v{a.version}
        </span>
      </div>
      {a.description && <p class="muted">{a.description}</p>}
      <HostWarnings slug={a.slug} version={a.version} />
      <nav aria-label="Agent" class="tabs">
        {TABS.map(([path, label]) => (
          <Link key={path} href={path} aria-current={current(path) ? 'page' : undefined}>
            {label}
          </Link>
        ))}
      </nav>
      <Switch>
        <Route path="/">
          <Overview agent={a} />
        </Route>
        <Route path="/conversations">
          <Conversations agent={a} />
        </Route>
        <Route path="/conversations/:id">{(p) => <ConversationView agent={a} id={p.id} />}</Route>
        <Route path="/review">
          <Review agent={a} />
        </Route>
        <Route path="/evaluations">
          <Evaluations agent={a} />
        </Route>
        <Route path="/evaluations/:id">{(p) => <EvaluationView agent={a} id={p.id} />}</Route>
        <Route path="/versions">
          <Versions agent={a} onActivated={agent.reload} />
        </Route>
        <Route path="/playground">
          <Playground agent={a} />
        </Route>
        <Route path="/replays">
          <Replays agent={a} />
        </Route>
        <Route path="/replays/:id">{(p) => <ReplayView agent={a} id={p.id} />}</Route>
        <Route path="/tests">
          <Tests agent={a} />
        </Route>
        <Route path="/install">
          <Install agent={a} />
        </Route>
        <Route path="/channels">
          <Channels agent={a} />
        </Route>
        <Route>
          <Empty title="No such page">
            <Link href="/">Back to the agent</Link>
          </Empty>
        </Route>
      </Switch>
    </section>
  );
}

/** The hosts the current version's actions and webhooks name that this tenant may not reach: every call to them fails. */
function HostWarnings({ slug, version }: { slug: string; version: number }) {
  const { client } = useSession();
  const v = useLoad(async () => ok(await client.api.getVersion({ params: { slug, version } })), [client, slug, version]);
  const warnings = v.data?.warnings ?? [];
  if (warnings.length === 0) return null;
  return (
    <div class="notice" role="alert">
      <strong>Version v{version} calls hosts this tenant may not reach</strong>
      <ul>
        {warnings.map((w, i) => (
          <li key={i}>
            {w.path && <code>{w.path}</code>} {w.message}
          </li>
        ))}
      </ul>
    </div>
  );
}
