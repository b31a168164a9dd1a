import { useEffect, useState } from 'preact/hooks';
import { kubeconfigUrl, watchCluster } from './api.js';
import { useClusters } from './clusters.jsx';
import { RequestTable } from './requests.jsx';
import { age, matches, podState, rollout, selects } from './format.js';

const WORKLOADS = [['deployments', 'Deployment'], ['statefulsets', 'StatefulSet'], ['daemonsets', 'DaemonSet'], ['jobs', 'Job']];
const TABS = [['workloads', 'Workloads'], ['pods', 'Pods by Node'], ['namespaces', 'Namespaces'], ['events', 'Events'], ['requests', 'Requests']];

function useCluster(cloud, name) {
  const [objects, setObjects] = useState({});
  const [status, setStatus] = useState('connecting');
  useEffect(() => {
    setObjects({});
    return watchCluster(cloud, name, (resource, items) => setObjects((o) => ({ ...o, [resource]: items })), setStatus);
  }, [cloud, name]);
  return [objects, status];
}

export function ClusterView({ cloud, name, tab = 'workloads', detail, requests }) {
  const [clusters] = useClusters();
  const [objects, status] = useCluster(cloud, name);
  const [namespace, setNamespace] = useState('');
  const [search, setSearch] = useState('');
  const cluster = (clusters ?? []).find((c) => c.cloud === cloud && c.name === name);
  const base = `#/clusters/${cloud}/${encodeURIComponent(name)}`;
  const inNs = (o) => !namespace || o.metadata?.namespace === namespace;
  const namespaces = (objects.namespaces ?? []).map((n) => n.metadata.name).sort();
  const view = { objects, inNs, search, base };
  return (
    <section>
      <div class="toolbar">
        <h1><a href="#/">Clusters</a> / <span class={`cloud ${cloud}`}>{cloud.toUpperCase()}</span> {name}</h1>
        {cluster && <span class="mono dim">{cluster.endpoint} · {cluster.version} · {cluster.state}</span>}
        <span class={`pill ${status === 'live' ? 'ready' : 'progressing'}`} data-watch={status}>{status}</span>
        {cluster?.endpoint && <a class="button" href={kubeconfigUrl(cluster)} download={`${cloud}-${name}.kubeconfig`}>Kubeconfig</a>}
      </div>
      <div class="toolbar">
        <nav class="tabs">
          {TABS.map(([id, label]) => <a href={`${base}/${id}`} class={tab === id ? 'active' : ''}>{label}</a>)}
        </nav>
        <select value={namespace} onChange={(e) => setNamespace(e.target.value)} aria-label="Namespace">
          <option value="">All namespaces</option>
          {namespaces.map((n) => <option value={n}>{n}</option>)}
        </select>
        <input type="search" placeholder="Search" value={search} onInput={(e) => setSearch(e.target.value)} aria-label="Search" />
      </div>
      {tab === 'workloads' && detail.length === 2 && <DeploymentDetail {...view} namespace={detail[0]} name={detail[1]} />}
      {tab === 'workloads' && detail.length !== 2 && <Workloads {...view} />}
      {tab === 'pods' && <PodsByNode {...view} />}
      {tab === 'namespaces' && <Namespaces {...view} />}
      {tab === 'events' && <Events {...view} />}
      {tab === 'requests' && <RequestTable records={requests.filter((r) => r.cluster === name)} search={search} />}
    </section>
  );
}

function Workloads({ objects, inNs, search, base }) {
  const rows = WORKLOADS.flatMap(([resource, kind]) =>
    (objects[resource] ?? []).filter((o) => inNs(o) && matches(search, o.metadata.name, o.metadata.namespace, kind))
      .map((o) => [kind, o]));
  if (!rows.length) return <p class="empty">No workloads{search ? ' match' : ''}.</p>;
  return (
    <table>
      <thead><tr><th>Kind</th><th>Namespace</th><th>Name</th><th>Rollout</th><th>Status</th><th>Age</th></tr></thead>
      <tbody>
        {rows.map(([kind, o]) => {
          const [state, text] = rollout(kind, o);
          const link = kind === 'Deployment' ? `${base}/workloads/${encodeURIComponent(o.metadata.namespace)}/${encodeURIComponent(o.metadata.name)}` : null;
          return (
            <tr data-workload={`${kind}/${o.metadata.name}`}>
              <td>{kind}</td>
              <td>{o.metadata.namespace}</td>
              <td>{link ? <a href={link}>{o.metadata.name}</a> : o.metadata.name}</td>
              <td><span class={`pill ${state}`}>{state}</span></td>
              <td>{text}</td>
              <td>{age(o.metadata.creationTimestamp)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function PodTable({ pods }) {
  if (!pods.length) return <p class="empty">No Pods.</p>;
  return (
    <table>
      <thead><tr><th>Namespace</th><th>Name</th><th>Status</th><th>Ready</th><th>Restarts</th><th>Node</th><th>IP</th><th>Age</th></tr></thead>
      <tbody>
        {pods.map((p) => {
          const [text, cls] = podState(p);
          const cs = p.status?.containerStatuses ?? [];
          return (
            <tr data-pod={p.metadata.name}>
              <td>{p.metadata.namespace}</td>
              <td>{p.metadata.name}</td>
              <td><span class={`pill ${cls}`}>{text}</span></td>
              <td>{cs.filter((c) => c.ready).length}/{(p.spec?.containers ?? []).length}</td>
              <td>{cs.reduce((n, c) => n + (c.restartCount ?? 0), 0)}</td>
              <td>{p.spec?.nodeName ?? '—'}</td>
              <td class="mono">{p.status?.podIP ?? ''}</td>
              <td>{age(p.metadata.creationTimestamp)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function DeploymentDetail({ objects, namespace, name, base }) {
  const d = (objects.deployments ?? []).find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  if (!d) return <p class="empty">Deployment {namespace}/{name} is not (or no longer) in the cluster.</p>;
  const [state, text] = rollout('Deployment', d);
  const pods = (objects.pods ?? []).filter((p) => p.metadata.namespace === namespace && selects(d.spec?.selector, p.metadata.labels));
  const events = (objects.events ?? []).filter((e) => e.involvedObject?.namespace === namespace
    && (e.involvedObject?.name === name || pods.some((p) => p.metadata.name === e.involvedObject?.name)));
  return (
    <div class="detail" data-deployment={name}>
      <h2><a href={`${base}/workloads`}>Workloads</a> / Deployment {namespace}/{name} <span class={`pill ${state}`}>{state}</span></h2>
      <p>{text} · strategy {d.spec?.strategy?.type ?? 'RollingUpdate'} · images {(d.spec?.template?.spec?.containers ?? []).map((c) => c.image).join(', ')}</p>
      <h3>Conditions</h3>
      <table>
        <thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th></tr></thead>
        <tbody>{(d.status?.conditions ?? []).map((c) => <tr><td>{c.type}</td><td>{c.status}</td><td>{c.reason}</td><td>{c.message}</td></tr>)}</tbody>
      </table>
      <h3>Pods ({pods.length})</h3>
      <PodTable pods={pods} />
      <h3>Events</h3>
      <EventTable events={events} />
    </div>
  );
}

function PodsByNode({ objects, inNs, search }) {
  const pods = (objects.pods ?? []).filter((p) => inNs(p) && matches(search, p.metadata.name, p.metadata.namespace, p.spec?.nodeName));
  const nodes = (objects.nodes ?? []).map((n) => n.metadata.name).sort();
  const unscheduled = pods.filter((p) => !p.spec?.nodeName);
  return (
    <div class="nodes">
      {nodes.map((node) => {
        const n = objects.nodes.find((x) => x.metadata.name === node);
        const ready = (n.status?.conditions ?? []).find((c) => c.type === 'Ready')?.status === 'True';
        const on = pods.filter((p) => p.spec?.nodeName === node);
        return (
          <div class="node" data-node={node}>
            <h3><span class={`dot ${ready ? 'ready' : 'failed'}`} /> {node}
              <span class="dim"> {n.metadata.labels?.['node.kubernetes.io/instance-type'] ?? ''} · {on.length} Pods</span></h3>
            <div class="chips">
              {on.map((p) => { const [text, cls] = podState(p); return <span class={`chip ${cls}`} title={`${p.metadata.namespace}/${p.metadata.name}: ${text}`}>{p.metadata.name}</span>; })}
            </div>
          </div>
        );
      })}
      {unscheduled.length > 0 && (
        <div class="node unscheduled">
          <h3>Not scheduled <span class="dim">{unscheduled.length} Pods</span></h3>
          <div class="chips">{unscheduled.map((p) => <span class="chip failed" title={(p.status?.conditions ?? []).map((c) => c.message).filter(Boolean).join('; ')}>{p.metadata.name}</span>)}</div>
        </div>
      )}
      {!nodes.length && !unscheduled.length && <p class="empty">No Nodes.</p>}
    </div>
  );
}

function Namespaces({ objects, search }) {
  const ns = (objects.namespaces ?? []).filter((n) => matches(search, n.metadata.name));
  const count = (resource, n) => (objects[resource] ?? []).filter((o) => o.metadata.namespace === n).length;
  return (
    <table>
      <thead><tr><th>Name</th><th>Phase</th><th>Pods</th><th>Deployments</th><th>Age</th></tr></thead>
      <tbody>{ns.map((n) => (
        <tr><td>{n.metadata.name}</td><td>{n.status?.phase}</td><td>{count('pods', n.metadata.name)}</td>
          <td>{count('deployments', n.metadata.name)}</td><td>{age(n.metadata.creationTimestamp)}</td></tr>
      ))}</tbody>
    </table>
  );
}

function EventTable({ events }) {
  if (!events.length) return <p class="empty">No Events.</p>;
  const when = (e) => e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
  const sorted = [...events].sort((a, b) => String(when(b)).localeCompare(String(when(a))));
  return (
    <table>
      <thead><tr><th>Last seen</th><th>Type</th><th>Reason</th><th>Object</th><th>Message</th></tr></thead>
      <tbody>{sorted.map((e) => (
        <tr class={e.type === 'Warning' ? 'warning' : ''}>
          <td>{age(when(e))}</td><td>{e.type}</td><td>{e.reason}</td>
          <td>{e.involvedObject?.kind}/{e.involvedObject?.name}</td><td>{e.message}</td>
        </tr>
      ))}</tbody>
    </table>
  );
}

function Events({ objects, inNs, search }) {
  const events = (objects.events ?? []).filter((e) => inNs(e) && matches(search, e.reason, e.message, e.involvedObject?.name, e.type));
  return <EventTable events={events} />;
}
