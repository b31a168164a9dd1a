// Everything the dashboard knows it reads from kemu's admin endpoint: the
// cluster list, the request log's stream, and each cluster's own Kubernetes
// API (lists and watches, relayed by the admin endpoint as server-sent events).

export async function fetchClusters() {
  const r = await fetch('/kemu/clusters');
  if (!r.ok) throw new Error(`GET /kemu/clusters: HTTP ${r.status}`);
  return r.json();
}

export function kubeconfigUrl(c) {
  const q = new URLSearchParams({ name: c.name, cloud: c.cloud, download: '1' });
  return `/kemu/kubeconfig?${q}`;
}

// Calls `onRecords(list)` with the request log's records, the ones already
// held first, then each as it is made.
export function streamRequests(onRecords) {
  const source = new EventSource('/kemu/requests/stream');
  source.onmessage = (e) => onRecords([JSON.parse(e.data)]);
  return () => source.close();
}

// Keeps `onChange(resource, items)` told of a cluster's objects of each kind
// the admin endpoint watches (namespaces, nodes, pods, workloads, events).
export function watchCluster(cloud, name, onChange, onStatus) {
  const held = {};
  const key = (o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
  const url = `/kemu/clusters/${encodeURIComponent(cloud)}/${encodeURIComponent(name)}/watch`;
  const source = new EventSource(url);
  source.onopen = () => onStatus?.('live');
  source.onerror = () => onStatus?.('reconnecting');
  source.onmessage = (e) => {
    const ev = JSON.parse(e.data);
    if (ev.type === 'ERROR') {
      onStatus?.(ev.message);
      return;
    }
    let m = held[ev.resource];
    if (ev.type === 'RESET') {
      m = new Map(ev.items.map((o) => [key(o), o]));
    } else {
      m = new Map(m ?? []);
      if (ev.type === 'DELETED') m.delete(key(ev.object));
      else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') m.set(key(ev.object), ev.object);
      else return;
    }
    held[ev.resource] = m;
    onChange(ev.resource, [...m.values()]);
  };
  return () => source.close();
}
