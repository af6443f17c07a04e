// The tenant's agents.
import { Link } from 'wouter-preact';
import { ok, useLoad } from '../api';
import { useSession } from '../session';
import { Empty, ErrorBox, Loading, TableWrap, Time, Head } from '../components/ui';

export function AgentsPage() {
  const { client } = useSession();
  const agents = useLoad(async () => ok(await client.api.listAgents({})).data, [client]);
  return (
    <section>
      <h1>Agents</h1>
      {agents.error && <ErrorBox error={agents.error} retry={agents.reload} />}
      {!agents.data && !agents.error && <Loading what="agents" />}
      {agents.data?.length === 0 && (
        <Empty title="This tenant has no agents yet">
          <p>
            Put one with <code>npm run agents -- apply --url {location.origin} --tenant TENANT agents/acme-support.yaml</code> or{' '}
            <code>PUT /api/v1/agents/:slug</code>; <code>npm start</code> loads the example agents for the tenant &ldquo;demo&rdquo;.
          </p>
        </Empty>
      )}
      {agents.data && agents.data.length > 0 && (
        <TableWrap label="Agents">
          <table>
            <Head cols={['Agent', 'Version', 'Capabilities', 'Updated']} />
            <tbody>
              {agents.data.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link href={`/agents/${a.slug}`}>{a.name}</Link>
                    <div class="muted small">{a.slug}</div>
                  </td>
                  <td>v{a.version}</td>
                  <td>{a.capabilities.map((c) => c.name).join(', ')}</td>
                  <td>
                    <Time iso={a.updated_at} />
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
