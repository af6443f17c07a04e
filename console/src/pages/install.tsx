// Install: put the agent on a site with the web chat widget. A publishable key for the agent and
// the site's origins, the snippet to paste (with its SRI-pinned form), the keys already made for
// this agent (revocable), and how a site's server signs its users' ids (docs/widget.md).
import { useState } from 'preact/hooks';
import type { Agent, ApiKey } from '@switchboard/client';
import { ok, useAction, useLoad } from '../api';
import { useSession } from '../session';
import { ErrorBox, Loading } from '../components/ui';

/** The script's version and SRI hash, as the server serves it (its headers say). */
function useScript() {
  return useLoad(async () => {
    const res = await fetch('/widget/v1.js', { method: 'HEAD' });
    return { version: res.headers.get('x-widget-version'), integrity: res.headers.get('x-widget-integrity') };
  }, []);
}

function Snippet({ slug, keyText, pinned }: { slug: string; keyText: string; pinned: { version: string | null; integrity: string | null } | undefined }) {
  const base = `${location.origin}/widget/v1.js`;
  const plain = `<script src="${base}" data-agent="${slug}" data-key="${keyText}" async></script>`;
  const exact =
    pinned?.version && pinned.integrity
      ? `<script src="${base}?v=${pinned.version}" integrity="${pinned.integrity}" crossorigin="anonymous" data-agent="${slug}" data-key="${keyText}" async></script>`
      : null;
  return (
    <div>
      <label>
        Snippet
        <textarea readOnly rows={3} class="mono" value={plain} />
      </label>
      {exact && (
        <label>
          Pinned to this release (Subresource Integrity; update it when the server is upgraded)
          <textarea readOnly rows={4} class="mono" value={exact} />
        </label>
      )}
    </div>
  );
}

export function Install({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const keys = useLoad(async () => ok(await client.api.listKeys()).data, [client]);
  const script = useScript();
  const [origins, setOrigins] = useState('');
  const [made, setMade] = useState<ApiKey | null>(null);
  const { busy, error, run } = useAction();
  const mine = (keys.data ?? []).filter((k) => k.widget && !k.revoked_at && k.widget.agents.includes(agent.slug));

  function create(e: Event) {
    e.preventDefault();
    void run(async () => {
      const list = origins
        .split(/[\s,]+/)
        .map((o) => o.trim())
        .filter(Boolean);
      const key = ok(await client.api.createKey({ body: { name: `widget for ${agent.slug}`, widget: { agents: [agent.slug], origins: list } } }), 201);
      setMade(key);
      setOrigins('');
      keys.reload();
    });
  }

  function revoke(id: string) {
    void run(async () => {
      ok(await client.api.revokeKey({ params: { id } }), 204);
      if (made?.id === id) setMade(null);
      keys.reload();
    });
  }

  return (
    <div>
      <h2>Install on a site</h2>
      <p class="muted small">
        The web chat widget puts this agent in a corner of your site. Make a publishable key for the origins of your pages (such as{' '}
        <code>https://shop.example.com</code>), then paste the snippet into them. The key is public by design: it works only for this agent, only on those
        origins, and within the widget’s limits.
      </p>
      <form onSubmit={create}>
        <label>
          Allowed origins (one per line)
          <textarea name="origins" rows={3} class="mono" value={origins} required onInput={(e) => setOrigins(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy || !origins.trim()}>
          {busy ? 'Making…' : 'Make a publishable key'}
        </button>
      </form>
      {error && <ErrorBox error={error} />}
      {made?.widget && (
        <section aria-labelledby="made-h" role="status">
          <h3 id="made-h">Your snippet</h3>
          <Snippet slug={agent.slug} keyText={made.widget.key} pinned={script.data} />
        </section>
      )}
      <section aria-labelledby="keys-h">
        <h3 id="keys-h">Keys of this agent’s widget</h3>
        {keys.error && <ErrorBox error={keys.error} retry={keys.reload} />}
        {!keys.data && !keys.error && <Loading what="the keys" />}
        {keys.data && !mine.length && <p class="muted">None yet.</p>}
        <ul class="results">
          {mine.map((k) => (
            <li key={k.id}>
              <code>{k.widget!.key}</code> · {k.widget!.origins.join(', ')}{' '}
              <button type="button" onClick={() => revoke(k.id)} disabled={busy}>
                Revoke
              </button>
              <Snippet slug={agent.slug} keyText={k.widget!.key} pinned={script.data} />
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="identity-h">
        <h3 id="identity-h">Signed-in visitors</h3>
        <p class="muted small">
          To show a signed-in user’s conversations under their own id, store a secret as the tenant secret <code>WIDGET_IDENTITY_SECRET</code>, and have your
          server sign each user’s id with it; the page passes both:
        </p>
        <pre class="mono small">{`// Node, on your server (crypto is node:crypto)
const userHash = crypto.createHmac('sha256', process.env.WIDGET_IDENTITY_SECRET).update(user.id).digest('hex');
// in the page: data-user-id="\${user.id}" data-user-hash="\${userHash}"`}</pre>
      </section>
    </div>
  );
}
