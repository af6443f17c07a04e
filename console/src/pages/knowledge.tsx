// The tenant's knowledge sources (docs/knowledge.md): their state, uploading a document by
// choosing it or dropping it on the page, with the upload's progress and then the reading's, and
// web pages and sites (knowledge-sites.tsx).
import { useState } from 'preact/hooks';
import { sourceNameOf, type KnowledgeSource } from '@switchboard/client';
import { allPages, asApiError, ok, useLoad, type ApiError } from '../api';
import { clientFor, useSession } from '../session';
import { Empty, ErrorBox, Field, Head, Loading, TableWrap, Time } from '../components/ui';
import { AddSite, SitePages, SyncNow } from './knowledge-sites';

/**
 * A fetch for the typed client that sends through XMLHttpRequest: a browser's fetch reports
 * nothing of a body's upload, XMLHttpRequest does (`upload.onprogress`). Only the upload uses it.
 */
function progressFetch(onProgress: (sent: number, total: number) => void): typeof fetch {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(init?.method ?? 'GET', input instanceof Request ? input.url : input.toString());
      new Headers(init?.headers).forEach((v, k) => {
        // The browser writes the multipart boundary itself.
        if (k !== 'content-type' || !(init?.body instanceof FormData)) xhr.setRequestHeader(k, v);
      });
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.total);
      xhr.onload = () =>
        resolve(new Response(xhr.responseText, { status: xhr.status, headers: { 'content-type': xhr.getResponseHeader('content-type') ?? '' } }));
      xhr.onerror = () => reject(new TypeError('the upload did not reach the server'));
      xhr.send((init?.body ?? null) as XMLHttpRequestBodyInit | null);
    });
}

function Upload({ onDone }: { onDone: () => void }) {
  const { credentials, client } = useSession();
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState('');
  const [title, setTitle] = useState('');
  const [link, setLink] = useState('');
  const [tags, setTags] = useState('');
  const [over, setOver] = useState(false);
  const [progress, setProgress] = useState<{ stage: string; sent?: number; total?: number } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const choose = (f: File | undefined) => {
    if (!f) return;
    setFile(f);
    setName(sourceNameOf(f.name));
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!file) return;
    setError(null);
    setProgress({ stage: 'Uploading', sent: 0, total: file.size });
    try {
      const uploader = clientFor(
        credentials,
        progressFetch((sent, total) => setProgress({ stage: 'Uploading', sent, total })),
      );
      ok(
        await uploader.api.putSource({
          params: { source: name },
          body: { file, ...(title ? { title } : {}), ...(link ? { url: link } : {}), ...(tags ? { tags } : {}) },
        }),
        202,
      );
      setProgress({ stage: 'Reading' });
      for (;;) {
        const s = ok(await client.api.getSource({ params: { source: name } }));
        if (s.state !== 'parsing') break;
        await new Promise((r) => setTimeout(r, 500));
      }
      setFile(null);
      setName('');
      onDone();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setProgress(null);
    }
  };
  return (
    <form class="card upload" onSubmit={(e) => void submit(e)} aria-label="Upload to the knowledge sources">
      <div
        class={`drop${over ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          choose(e.dataTransfer?.files[0]);
        }}
      >
        <p>{file ? `${file.name} (${file.size} bytes)` : 'Drop a PDF, DOCX, HTML, Markdown or text file here, or choose one.'}</p>
        <Field label="Document">
          {(id) => (
            <input id={id} type="file" accept=".pdf,.docx,.html,.htm,.md,.markdown,.txt" onChange={(e) => choose((e.target as HTMLInputElement).files?.[0])} />
          )}
        </Field>
      </div>
      <Field label="Name">
        {(id) => <input id={id} value={name} required pattern="[a-z0-9][a-z0-9_\-]{0,63}" onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
      </Field>
      <Field label="Title (optional)">{(id) => <input id={id} value={title} onInput={(e) => setTitle((e.target as HTMLInputElement).value)} />}</Field>
      <Field label="Link in citations (optional)">
        {(id) => <input id={id} type="url" value={link} onInput={(e) => setLink((e.target as HTMLInputElement).value)} />}
      </Field>
      <Field label="Tags, comma-separated (optional)">
        {(id) => <input id={id} value={tags} onInput={(e) => setTags((e.target as HTMLInputElement).value)} />}
      </Field>
      <button type="submit" disabled={!file || !name || progress !== null}>
        Upload
      </button>
      {progress && (
        <p role="status">
          {progress.stage}
          {progress.total ? (
            <>
              {' '}
              <progress max={progress.total} value={progress.sent} /> {Math.round(((progress.sent ?? 0) / progress.total) * 100)}%
            </>
          ) : (
            '…'
          )}
        </p>
      )}
      {error && <ErrorBox error={error} />}
    </form>
  );
}

export function KnowledgePage() {
  const { client } = useSession();
  const sources = useLoad(
    () => allPages(async (cursor) => ok(await client.api.listSources({ query: { limit: 100, ...(cursor ? { cursor } : {}) } }))),
    [client],
  );
  return (
    <section>
      <h1>Knowledge</h1>
      <p class="muted">
        Documents and web pages agents answer from and cite: name them in an agent's <code>knowledge_sources</code> (docs/knowledge.md).
      </p>
      <div class="knowledge-forms">
        <Upload onDone={sources.reload} />
        <AddSite onDone={sources.reload} />
      </div>
      {sources.error && <ErrorBox error={sources.error} retry={sources.reload} />}
      {!sources.data && !sources.error && <Loading what="knowledge sources" />}
      {sources.data?.length === 0 && <Empty title="No knowledge sources yet" />}
      {sources.data && sources.data.length > 0 && (
        <TableWrap label="Knowledge sources">
          <table>
            <Head cols={['Source', 'State', 'From', 'Pages', 'Passages', 'Tags', 'Indexed']} />
            <tbody>
              {sources.data.map((s: KnowledgeSource) => (
                <tr key={s.name} data-source={s.name}>
                  <td>
                    {s.title ?? s.name}
                    <div class="muted small">{s.name}</div>
                  </td>
                  <td>
                    <span class={`badge state-${s.state}`}>{s.state}</span>
                    {s.error && <div class="small">{s.error}</div>}
                  </td>
                  <td>
                    {s.site ? <span class="url">{s.site.url}</span> : (s.filename ?? '—')}
                    <div class="muted small">
                      {s.site
                        ? `${s.site.crawl === 'page' ? 'one page' : s.site.crawl === 'sitemap' ? 'its sitemap' : `links ${s.site.depth} deep`}, synced ${s.schedule === 'never' ? 'when asked' : s.schedule}, ${s.bytes} bytes`
                        : `${s.kind ?? 'not read yet'}, ${s.bytes} bytes, revision ${s.revision}`}
                    </div>
                    {s.site && (
                      <div class="muted small">
                        fetched <Time iso={s.fetched_at} />
                        {s.next_sync_at && (
                          <>
                            , next <Time iso={s.next_sync_at} />
                          </>
                        )}
                      </div>
                    )}
                    {s.site && <SyncNow source={s} onDone={sources.reload} />}
                  </td>
                  <td>{s.site ? <SitePages source={s} /> : (s.pages ?? '—')}</td>
                  <td>{s.passages}</td>
                  <td>{s.tags.join(', ')}</td>
                  <td>
                    <Time iso={s.indexed_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}
