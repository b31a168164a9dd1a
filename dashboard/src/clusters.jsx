import { useEffect, useState } from 'preact/hooks';
import { fetchClusters, kubeconfigUrl } from './api.js';
import { CLOUDS, matches } from './format.js';

export function useClusters() {
  const [clusters, setClusters] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const c = await fetchClusters();
        if (!stop) { setClusters(c); setError(null); }
      } catch (e) {
        if (!stop) setError(String(e));
      }
    };
    tick();
    const t = setInterval(tick, 1500);
    return () => { stop = true; clearInterval(t); };
  }, []);
  return [clusters, error];
}

const stateClass = (s) => ({ RUNNING: 'ready', FAILED: 'failed', DELETING: 'warn' }[s] ?? 'progressing');

export function ClustersView() {
  const [clusters, error] = useClusters();
  const [search, setSearch] = useState('');
  const [cloud, setCloud] = useState('');
  const shown = (clusters ?? []).filter((c) =>
    (!cloud || c.cloud === cloud) && matches(search, c.name, c.scope, c.state, c.endpoint, c.version));
  return (
    <section>
      <div class="toolbar">
        <h1>Clusters</h1>
        <input type="search" placeholder="Search clusters" value={search} onInput={(e) => setSearch(e.target.value)} aria-label="Search clusters" />
        <select value={cloud} onChange={(e) => setCloud(e.target.value)} aria-label="Cloud">
          <option value="">All clouds</option>
          {Object.entries(CLOUDS).map(([k, v]) => <option value={k}>{v}</option>)}
        </select>
      </div>
      {error && <p class="error">{error}</p>}
      {clusters && clusters.length === 0 && (
        <p class="empty">No clusters yet. Create one with <code>aws eks create-cluster</code>,{' '}
          <code>gcloud container clusters create</code> or <code>az aks create</code>.</p>
      )}
      {shown.length > 0 && (
        <table class="clusters">
          <thead><tr><th>Cloud</th><th>Name</th><th>Scope</th><th>State</th><th>Version</th><th>Endpoint</th><th>Node pools</th><th></th></tr></thead>
          <tbody>
            {shown.map((c) => (
              <tr data-cluster={c.name}>
                <td><span class={`cloud ${c.cloud}`}>{c.cloud.toUpperCase()}</span></td>
                <td><a href={`#/clusters/${c.cloud}/${encodeURIComponent(c.name)}`}>{c.name}</a></td>
                <td class="mono">{c.scope}</td>
                <td><span class={`pill ${stateClass(c.state)}`}>{c.state}</span></td>
                <td>{c.version}</td>
                <td class="mono">{c.endpoint || '—'}</td>
                <td>{(c.nodePools ?? []).map((p) => <span class="pool" title={p.machineType}>{p.name} × {p.count}</span>)}</td>
                <td>{c.endpoint && <a class="button" href={kubeconfigUrl(c)} download={`${c.cloud}-${c.name}.kubeconfig`}>Kubeconfig</a>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
