// Web knowledge sources in the console (docs/knowledge.md, "A web page or a site"): adding a
// page or a site with its schedule and following its first sync, syncing one now, and its pages
// with the state and error of each.
import { useState } from 'preact/hooks';
import { siteNameOf, type KnowledgeSource } from '@switchboard/client';
import { ok, useAction, useLoad } from '../api';
import { useSession } from '../session';
import { ErrorBox, Field, Head, Loading, TableWrap, Time } from '../components/ui';

type Crawl = 'page' | 'sitemap' | 'links';
type Schedule = 'hourly' | 'daily' | 'weekly' | 'never';

const syncing = (s: KnowledgeSource) => s.state === 'queued' || s.state === 'fetching';

/** Reads a source until its sync has ended, showing its state, pages and passages as they come. */
async function followSync(read: () => Promise<KnowledgeSource>, show: (s: KnowledgeSource) => void): Promise<void> {
  for (;;) {
    const s = await read();
    show(s);
    if (!syncing(s)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

const describeProgress = (s: KnowledgeSource) => `${s.state === 'queued' ? 'Waiting for a server' : 'Fetching'}: ${s.pages ?? 0} pages, ${s.passages} passages`;

export function AddSite({ onDone }: { onDone: () => void }) {
  const { client } = useSession();
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [named, setNamed] = useState(false);
  const [crawl, setCrawl] = useState<Crawl>('page');
  const [depth, setDepth] = useState(2);
  const [maxPages, setMaxPages] = useState(100);
  const [schedule, setSchedule] = useState<Schedule>('daily');
  const [tags, setTags] = useState('');
  const [progress, setProgress] = useState('');
  const action = useAction();
  const typeUrl = (v: string) => {
    setUrl(v);
    if (!named) setName(siteNameOf(v));
    if (/\.xml(\.gz)?$/i.test(v)) setCrawl('sitemap');
  };
  const submit = (e: Event) => {
    e.preventDefault();
    setProgress('Adding');
    void action.run(async () => {
      ok(
        await client.api.putSite({
          params: { source: name },
          body: {
            url,
            crawl,
            schedule,
            ...(crawl === 'links' ? { depth } : {}),
            ...(crawl !== 'page' ? { max_pages: maxPages } : {}),
            tags: tags
              .split(',')
              .map((t) => t.trim())
              .filter(Boolean),
          },
        }),
        202,
      );
      await followSync(
        async () => ok(await client.api.getSource({ params: { source: name } })),
        (s) => setProgress(describeProgress(s)),
      );
      setUrl('');
      setName('');
      setNamed(false);
      onDone();
    });
  };
  return (
    <form class="card upload" onSubmit={submit} aria-label="Add a web page or site">
      <Field label="Page or sitemap URL">
        {(id) => (
          <input
            id={id}
            type="url"
            required
            value={url}
            placeholder="https://help.example.com/sitemap.xml"
            onInput={(e) => typeUrl((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <Field label="Fetch">
        {(id) => (
          <select id={id} value={crawl} onChange={(e) => setCrawl((e.target as HTMLSelectElement).value as Crawl)}>
            <option value="page">this page</option>
            <option value="sitemap">the pages of this sitemap</option>
            <option value="links">the pages its links reach</option>
          </select>
        )}
      </Field>
      {crawl === 'links' && (
        <Field label="Links deep">
          {(id) => <input id={id} type="number" min={0} max={5} value={depth} onInput={(e) => setDepth(Number((e.target as HTMLInputElement).value))} />}
        </Field>
      )}
      {crawl !== 'page' && (
        <Field label="Most pages">
          {(id) => <input id={id} type="number" min={1} value={maxPages} onInput={(e) => setMaxPages(Number((e.target as HTMLInputElement).value))} />}
        </Field>
      )}
      <Field label="Sync">
        {(id) => (
          <select id={id} value={schedule} onChange={(e) => setSchedule((e.target as HTMLSelectElement).value as Schedule)}>
            <option value="hourly">hourly</option>
            <option value="daily">daily</option>
            <option value="weekly">weekly</option>
            <option value="never">only when asked</option>
          </select>
        )}
      </Field>
      <Field label="Source name">
        {(id) => (
          <input
            id={id}
            value={name}
            required
            pattern="[a-z0-9][a-z0-9_\-]{0,63}"
            onInput={(e) => {
              setNamed(true);
              setName((e.target as HTMLInputElement).value);
            }}
          />
        )}
      </Field>
      <Field label="Its tags, comma-separated (optional)">
        {(id) => <input id={id} value={tags} onInput={(e) => setTags((e.target as HTMLInputElement).value)} />}
      </Field>
      <button type="submit" disabled={!url || !name || action.busy}>
        Add and sync
      </button>
      {action.busy && <p role="status">{progress}…</p>}
      {action.error && <ErrorBox error={action.error} />}
    </form>
  );
}

/** "Sync now" for a web source: queues a sync and follows it, then reloads the list. */
export function SyncNow({ source, onDone }: { source: KnowledgeSource; onDone: () => void }) {
  const { client } = useSession();
  const [progress, setProgress] = useState('');
  const action = useAction();
  const sync = () => {
    setProgress('Queued');
    void action.run(async () => {
      ok(await client.api.syncSource({ params: { source: source.name } }), 202);
      await followSync(
        async () => ok(await client.api.getSource({ params: { source: source.name } })),
        (s) => setProgress(describeProgress(s)),
      );
      onDone();
    });
  };
  return (
    <div>
      <button type="button" class="secondary" disabled={action.busy || syncing(source)} onClick={sync}>
        Sync now
      </button>
      {action.busy && (
        <p role="status" class="small">
          {progress}…
        </p>
      )}
      {action.error && <ErrorBox error={action.error} />}
    </div>
  );
}

/** A web source's pages, loaded when opened. */
export function SitePages({ source }: { source: KnowledgeSource }) {
  const [open, setOpen] = useState(false);
  return (
    <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>{source.pages ?? 0} pages</summary>
      {open && <PageList name={source.name} />}
    </details>
  );
}

function PageList({ name }: { name: string }) {
  const { client } = useSession();
  const pages = useLoad(async () => ok(await client.api.listPages({ params: { source: name }, query: { limit: 200 } })), [client, name]);
  if (pages.error) return <ErrorBox error={pages.error} retry={pages.reload} />;
  if (!pages.data) return <Loading what="pages" />;
  return (
    <TableWrap label={`Pages of ${name}`}>
      <table>
        <Head cols={['Page', 'State', 'Passages', 'Fetched']} />
        <tbody>
          {pages.data.data.map((p) => (
            <tr key={p.url}>
              <td>
                {p.title ?? p.url}
                <div class="muted small">{p.url}</div>
              </td>
              <td>
                <span class={`badge state-${p.state === 'ok' ? 'indexed' : 'failed'}`}>{p.state}</span>
                {p.error && (
                  <div class="small">
                    {p.error} ({p.failures} in a row)
                  </div>
                )}
              </td>
              <td>{p.passages}</td>
              <td>
                <Time iso={p.fetched_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
