// Small pure helpers shared by the views.

export const CLOUDS = { eks: 'Amazon EKS', gke: 'Google GKE', aks: 'Azure AKS' };

export function matches(text, ...fields) {
  if (!text) return true;
  const t = text.toLowerCase();
  return fields.some((f) => String(f ?? '').toLowerCase().includes(t));
}

export function age(ts, now = Date.now()) {
  if (!ts) return '';
  const s = Math.max(0, Math.floor((now - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

const condition = (o, type) => (o.status?.conditions ?? []).find((c) => c.type === type);

// What `kubectl rollout status` would say of a workload, as [state, text].
export function rollout(kind, o) {
  const s = o.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (o.metadata?.generation ?? 0);
  const want = o.spec?.replicas ?? 1;
  switch (kind) {
    case 'Deployment': {
      const progressing = condition(o, 'Progressing');
      if (progressing?.status === 'False') return ['failed', progressing.message ?? progressing.reason];
      const done = observed && (s.updatedReplicas ?? 0) >= want && (s.availableReplicas ?? 0) >= want
        && (s.replicas ?? 0) <= want;
      return [done ? 'ready' : 'progressing', `${s.readyReplicas ?? 0}/${want} ready, ${s.updatedReplicas ?? 0} up to date`];
    }
    case 'StatefulSet': {
      const done = observed && (s.readyReplicas ?? 0) >= want && (s.updatedReplicas ?? 0) >= want;
      return [done ? 'ready' : 'progressing', `${s.readyReplicas ?? 0}/${want} ready`];
    }
    case 'DaemonSet': {
      const desired = s.desiredNumberScheduled ?? 0;
      const done = observed && (s.numberReady ?? 0) >= desired && (s.updatedNumberScheduled ?? 0) >= desired;
      return [done ? 'ready' : 'progressing', `${s.numberReady ?? 0}/${desired} ready`];
    }
    case 'Job': {
      if (condition(o, 'Failed')?.status === 'True') return ['failed', condition(o, 'Failed').message ?? 'failed'];
      if (condition(o, 'Complete')?.status === 'True') return ['ready', `complete, ${s.succeeded ?? 0} succeeded`];
      return ['progressing', `${s.active ?? 0} active, ${s.succeeded ?? 0} succeeded`];
    }
    default:
      return ['ready', ''];
  }
}

// A Pod's state as `kubectl get pods` shows it in STATUS, and its class.
export function podState(p) {
  if (p.metadata?.deletionTimestamp) return ['Terminating', 'progressing'];
  for (const cs of p.status?.containerStatuses ?? []) {
    const w = cs.state?.waiting?.reason;
    if (w) return [w, w === 'ContainerCreating' ? 'progressing' : 'failed'];
  }
  const phase = p.status?.phase ?? 'Pending';
  const unschedulable = (p.status?.conditions ?? []).find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unschedulable) return ['Pending', 'failed'];
  const cls = { Running: 'ready', Succeeded: 'done', Failed: 'failed' }[phase] ?? 'progressing';
  return [phase, cls];
}

export function selects(selector, labels) {
  const want = selector?.matchLabels ?? {};
  const keys = Object.keys(want);
  if (!keys.length && !(selector?.matchExpressions ?? []).length) return false;
  if (!keys.every((k) => labels?.[k] === want[k])) return false;
  return (selector?.matchExpressions ?? []).every((e) => {
    const v = labels?.[e.key];
    switch (e.operator) {
      case 'In': return e.values.includes(v);
      case 'NotIn': return !e.values.includes(v);
      case 'Exists': return v !== undefined;
      case 'DoesNotExist': return v === undefined;
      default: return false;
    }
  });
}

export function statusClass(code) {
  if (code >= 500) return 'failed';
  if (code >= 400) return 'warn';
  return 'ready';
}
