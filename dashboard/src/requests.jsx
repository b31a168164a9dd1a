import { useEffect, useState } from 'preact/hooks';
import { streamRequests } from './api.js';
import { matches, statusClass } from './format.js';

// The dashboard keeps the newest records it was sent, as the ring does.
const KEEP = 2000;

export function useRequests() {
  const [records, setRecords] = useState([]);
  useEffect(() => streamRequests((batch) => setRecords((r) => {
    const next = r.concat(batch);
    return next.length > KEEP ? next.slice(next.length - KEEP) : next;
  })), []);
  return records;
}

export function RequestTable({ records, search = '', status = '', api = '' }) {
  const shown = records.filter((r) =>
    (!api || r.api === api)
    && (!status || (status === 'errors' ? r.status >= 400 : String(r.status).startsWith(status[0])))
    && matches(search, r.path, r.verb, r.cluster, r.caller, r.resource, r.reason, r.status)).reverse();
  if (!shown.length) return <p class="empty">No requests{search || status || api ? ' match' : ' yet'}.</p>;
  return (
    <table class="requests">
      <thead><tr><th>Time</th><th>API</th><th>Cluster</th><th>Caller</th><th>Verb</th><th>Resource</th><th>Status</th><th>Latency</th><th>Reason</th></tr></thead>
      <tbody>{shown.map((r) => (
        <tr data-seq={r.seq} data-status={r.status} class={r.status >= 400 ? 'failed-row' : ''}>
          <td class="mono">{r.time?.slice(11, 23)}</td>
          <td>{r.api}</td>
          <td>{r.cluster ?? '—'}</td>
          <td class="mono">{r.caller ?? '—'}</td>
          <td>{r.verb}</td>
          <td class="mono" title={r.path}>{r.resource ?? r.path}</td>
          <td><span class={`pill ${statusClass(r.status)}`}>{r.status}</span></td>
          <td>{r.latency_ms?.toFixed(1)} ms</td>
          <td>{r.reason ?? ''}</td>
        </tr>
      ))}</tbody>
    </table>
  );
}

export function RequestsView({ records }) {
  const [search, setSearch] = useState('');
  const [status, setStatus] = useState('');
  const [api, setApi] = useState('');
  return (
    <section>
      <div class="toolbar">
        <h1>Requests</h1>
        <input type="search" placeholder="Search path, caller, reason" value={search} onInput={(e) => setSearch(e.target.value)} aria-label="Search requests" />
        <select value={api} onChange={(e) => setApi(e.target.value)} aria-label="API">
          <option value="">All APIs</option>
          {['kubernetes', 'eks', 'gke', 'aks'].map((a) => <option value={a}>{a}</option>)}
        </select>
        <select value={status} onChange={(e) => setStatus(e.target.value)} aria-label="Status">
          <option value="">Any status</option>
          <option value="errors">Errors (4xx, 5xx)</option>
          <option value="2xx">2xx</option>
          <option value="4xx">4xx</option>
          <option value="5xx">5xx</option>
        </select>
      </div>
      <RequestTable records={records} search={search} status={status} api={api} />
    </section>
  );
}
