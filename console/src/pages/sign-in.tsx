// Sign-in: with the company's OpenID provider when the server has one (docs/people.md); else a
// tenant id when the server trusts the tenant-id header (AUTH_MODE=header), or an API key when it
// runs with AUTH_MODE=api_key. Credentials are tried with a call before they are kept.
import { useState } from 'preact/hooks';
import { createSwitchboardClient } from '@switchboard/client';
import { ok, useAction, useLoad } from '../api';
import { clientFor, type Credentials } from '../session';
import { ErrorBox } from '../components/ui';

export function SignIn({ onSignedIn }: { onSignedIn: (c: Credentials) => void }) {
  const [mode, setMode] = useState<'tenant' | 'key'>('tenant');
  const [tenantId, setTenantId] = useState('demo');
  const [apiKey, setApiKey] = useState('');
  const { busy, error, run } = useAction();
  const options = useLoad(async () => ok(await createSwitchboardClient({ baseUrl: location.origin }).auth.getSignInOptions()), []);
  const provider = options.data?.provider;

  function submit(e: Event) {
    e.preventDefault();
    const c: Credentials = mode === 'tenant' ? { mode, tenantId: tenantId.trim() } : { mode, apiKey: apiKey.trim() };
    void run(async () => {
      ok(await clientFor(c).api.listAgents({}));
      onSignedIn(c);
    });
  }

  return (
    <section class="sign-in">
      <h1>Sign in to the console</h1>
      {provider && (
        <p>
          <a class="button primary" href={`${provider.sign_in_url}?return_to=${encodeURIComponent(location.pathname)}`}>
            Sign in with your company account
          </a>{' '}
          <span class="hint">({new URL(provider.issuer).host})</span>
        </p>
      )}
      <form onSubmit={submit}>
        <fieldset>
          <legend>How the server authenticates</legend>
          <label class="inline">
            <input type="radio" name="mode" checked={mode === 'tenant'} onChange={() => setMode('tenant')} /> Tenant id (AUTH_MODE=header)
          </label>
          <label class="inline">
            <input type="radio" name="mode" checked={mode === 'key'} onChange={() => setMode('key')} /> API key (AUTH_MODE=api_key)
          </label>
        </fieldset>
        {mode === 'tenant' ? (
          <div key="tenant">
            <label>
              Tenant
              <input
                name="tenant"
                value={tenantId}
                required
                maxLength={128}
                autoComplete="off"
                aria-describedby="tenant-hint"
                onInput={(e) => setTenantId(e.currentTarget.value)}
              />
            </label>
            <p id="tenant-hint" class="hint">
              The example agents of <code>npm start</code> belong to the tenant &ldquo;demo&rdquo;.
            </p>
          </div>
        ) : (
          <div key="key">
            <label>
              API key
              <input
                name="key"
                type="password"
                value={apiKey}
                required
                autoComplete="off"
                aria-describedby="key-hint"
                onInput={(e) => setApiKey(e.currentTarget.value)}
              />
            </label>
            <p id="key-hint" class="hint">
              Kept in this tab only: closing the tab signs you out. Create keys with <code>npm run keys</code>.
            </p>
          </div>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {error && <ErrorBox error={error} />}
    </section>
  );
}
