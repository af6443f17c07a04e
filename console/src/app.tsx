// The console's shell: sign-in, the header with the signed-in tenant, and the pages by path
// (/console/agents/:slug/…), each a bookmarkable address.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import type { CallerIdentity } from '@switchboard/client';
import { clientFor, loadCredentials, personSignedIn, saveCredentials, SessionContext, type Credentials, type Session } from './session';
import { SignIn } from './pages/sign-in';
import { AgentsPage } from './pages/agents';
import { AgentPage } from './pages/agent';
import { KnowledgePage } from './pages/knowledge';
import { Empty } from './components/ui';

export function App() {
  const [credentials, setCredentials] = useState<Credentials | null>(loadCredentials);
  // Back from the company's sign-in page, the session cookie is there before anything is kept.
  const [probing, setProbing] = useState(credentials === null);
  useEffect(() => {
    if (!probing) return;
    void personSignedIn().then((c) => {
      if (c) {
        saveCredentials(c);
        setCredentials(c);
      }
      setProbing(false);
    });
  }, []);
  const [identity, setIdentity] = useState<CallerIdentity | null>(null);
  const client = useMemo(() => (credentials ? clientFor(credentials) : null), [credentials]);
  // Who the server says the caller is, so that pages disable what their roles cannot do.
  useEffect(() => {
    setIdentity(null);
    if (!client) return;
    void client.api.getIdentity({}).then(
      (res) => res.status === 200 && setIdentity(res.body),
      () => undefined,
    );
  }, [client]);
  const session = useMemo<Session | null>(() => {
    if (!credentials || !client) return null;
    const forget = () => {
      saveCredentials(null);
      setCredentials(null);
    };
    return {
      credentials,
      client,
      identity,
      signOut: () => {
        if (credentials.mode !== 'person') {
          forget();
          return;
        }
        // The session ends on the server; then, when the provider has one, its own sign-out page.
        void client.auth.signOut({ headers: { 'x-csrf-token': credentials.csrf } }).then((res) => {
          forget();
          if (res.status === 200 && res.body.end_session_url) location.assign(res.body.end_session_url);
        }, forget);
      },
    };
  }, [credentials, client, identity]);
  return (
    <Router base="/console">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          Switchboard
        </Link>
        <nav aria-label="Main">
          {session && <Link href="/">Agents</Link>}
          {session && <Link href="/knowledge">Knowledge</Link>}
          {/* The API's interactive docs, served by the same server (outside the console's routes). */}
          <a href="/docs">API docs</a>
        </nav>
        {session && (
          <div class="who">
            <span>{who(session.credentials)}</span>
            <button type="button" onClick={session.signOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {session ? (
          <SessionContext.Provider value={session}>
            <Routes />
          </SessionContext.Provider>
        ) : probing ? (
          <p class="hint">Signing in…</p>
        ) : (
          <SignIn
            onSignedIn={(c) => {
              saveCredentials(c);
              setCredentials(c);
            }}
          />
        )}
      </main>
    </Router>
  );
}

function who(c: Credentials): string {
  if (c.mode === 'tenant') return `Tenant ${c.tenantId}`;
  if (c.mode === 'person') return `${c.name} · ${c.tenantId}`;
  return 'Signed in with an API key';
}

function Routes() {
  const [location] = useLocation();
  return (
    <Switch>
      <Route path="/">
        <AgentsPage />
      </Route>
      <Route path="/knowledge">
        <KnowledgePage />
      </Route>
      <Route path="/agents/:slug" nest>
        {(params) => <AgentPage slug={params.slug} />}
      </Route>
      <Route>
        <Empty title="No such page">
          <p>
            Nothing lives at <code>{location}</code>. <Link href="/">Go to the agents</Link>.
          </p>
        </Empty>
      </Route>
    </Switch>
  );
}
