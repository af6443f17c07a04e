// The console's shell: sign-in, the header with the signed-in tenant, and the pages by path
// (/console/agents/:slug/…), each a bookmarkable address.
import { useMemo, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import { clientFor, loadCredentials, saveCredentials, SessionContext, type Credentials, type Session } from './session';
import { SignIn } from './pages/sign-in';
import { AgentsPage } from './pages/agents';
import { AgentPage } from './pages/agent';
import { KnowledgePage } from './pages/knowledge';
import { Empty } from './components/ui';

export function App() {
  const [credentials, setCredentials] = useState<Credentials | null>(loadCredentials);
  const session = useMemo<Session | null>(
    () =>
      credentials && {
        credentials,
        client: clientFor(credentials),
        signOut: () => {
          saveCredentials(null);
          setCredentials(null);
        },
      },
    [credentials],
  );
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
            <span>{session.credentials.mode === 'tenant' ? `Tenant ${session.credentials.tenantId}` : 'Signed in with an API key'}</span>
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
