import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './style.css';
import { ClustersView } from './clusters.jsx';
import { ClusterView } from './cluster.jsx';
import { RequestsView } from './requests.jsx';
import { useRequests } from './requests.jsx';

// Routes live in the hash, so every view has an address to share:
// #/ · #/requests · #/clusters/CLOUD/NAME[/TAB[/NAMESPACE/DEPLOYMENT]]
function useRoute() {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read());
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const route = useRoute();
  const requests = useRequests();
  const [page, ...rest] = route;
  const failed = requests.filter((r) => r.status >= 400).length;
  return (
    <>
      <header>
        <a class="brand" href="#/">kemu</a>
        <nav>
          <a href="#/" class={!page || page === 'clusters' ? 'active' : ''}>Clusters</a>
          <a href="#/requests" class={page === 'requests' ? 'active' : ''}>
            Requests <span class="count">{requests.length}</span>
            {failed > 0 && <span class="count failed" title="answered 4xx or 5xx">{failed}</span>}
          </a>
        </nav>
      </header>
      <main>
        {page === 'requests' && <RequestsView records={requests} />}
        {page === 'clusters' && rest.length >= 2 && (
          <ClusterView cloud={rest[0]} name={rest[1]} tab={rest[2]} detail={rest.slice(3)} requests={requests} />
        )}
        {(!page || (page === 'clusters' && rest.length < 2)) && <ClustersView />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app'));
