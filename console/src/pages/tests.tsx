// Test conversations run on the server against any version (nothing stored, nothing sent): a
// test file pasted or opened (YAML or JSON, the shape of agents/*.test.yaml), and what failed.
import { useState } from 'preact/hooks';
import { parse } from 'yaml';
import type { Agent, TestResults } from '@switchboard/client';
import { ApiError, ok, useAction } from '../api';
import { useSession } from '../session';
import { ErrorBox } from '../components/ui';
import { useVersions, VersionSelect } from '../components/versions';

export function Tests({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const versions = useVersions(agent.slug);
  const [version, setVersion] = useState(agent.version);
  const [text, setText] = useState('');
  const [results, setResults] = useState<TestResults | null>(null);
  const { busy, error, run } = useAction();

  function submit(e: Event) {
    e.preventDefault();
    setResults(null);
    void run(async () => {
      let file: unknown;
      try {
        file = parse(text);
      } catch (err) {
        throw new ApiError(400, { title: 'Not YAML or JSON', detail: err instanceof Error ? err.message : String(err) });
      }
      const tests = (file && typeof file === 'object' && 'tests' in file ? file.tests : file) as never;
      setResults(ok(await client.api.runTests({ params: { slug: agent.slug }, body: { version, tests } })));
    });
  }

  return (
    <div>
      <h2>Tests</h2>
      <p class="muted small">
        Paste a test file (<code>agents/{agent.slug}.test.yaml</code>, or one saved from the Playground) or open one. It runs in memory on the server: actions
        answer what the test says, nothing is stored.
      </p>
      <form onSubmit={submit}>
        <div class="row">
          <label class="inline">
            Version <VersionSelect agent={agent} versions={versions.data} value={version} onChange={setVersion} />
          </label>
          <label class="inline">
            Open a file <input type="file" accept=".yaml,.yml,.json" onChange={(e) => void e.currentTarget.files?.[0]?.text().then(setText)} />
          </label>
        </div>
        <label>
          Test file
          <textarea name="tests" rows={12} class="mono" value={text} required onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy || !text.trim()}>
          {busy ? 'Running…' : 'Run the tests'}
        </button>
      </form>
      {error && <ErrorBox error={error} />}
      {results && (
        <section aria-labelledby="results-h">
          <div role="status">
            <h3 id="results-h" class={results.failed ? 'bad' : 'good'}>
              {results.passed} passed, {results.failed} failed on v{results.version}
            </h3>
          </div>
          <ul class="results">
            {results.results.map((t) => (
              <li key={t.name}>
                <span class={t.passed ? 'good' : 'bad'}>{t.passed ? '✓' : '✗'}</span> {t.name}
                {!t.passed && (
                  <ol>
                    {t.steps.map((s, i) =>
                      s.passed ? null : (
                        <li key={i} value={i + 1}>
                          &ldquo;{s.user}&rdquo;
                          <ul>
                            {s.failures.map((f) => (
                              <li key={f} class="bad small">
                                {f}
                              </li>
                            ))}
                          </ul>
                          <p class="small muted">
                            came back: {s.actual.capability} · {s.actual.phase} · {s.actual.status} · &ldquo;{s.actual.reply}&rdquo;
                          </p>
                        </li>
                      ),
                    )}
                  </ol>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}
