// defer.mjs runs one query with @defer through Apollo Client 4 (HttpLink,
// its Defer20220824Handler: Accept: multipart/mixed;deferSpec=20220824)
// against the gateway at GRAPHQL_URL with the headers in GRAPHQL_HEADERS,
// and prints every result the application is handed, in order: its data,
// its dataState ("streaming" while deferred parts are to come,
// "complete") and its errors; and the Content-Type and Content-Encoding
// the gateway answered.
// The query comes in APOLLO_QUERY; APOLLO_FETCH_POLICY, when set, is the
// watchQuery's fetchPolicy (unset: Apollo Client's default, cache-first,
// with the default InMemoryCache: what an application gets unless it
// asks otherwise).
import { ApolloClient, InMemoryCache, HttpLink, gql } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';

let contentType = '', contentEncoding = '';
const link = new HttpLink({
  uri: process.env.GRAPHQL_URL,
  headers: JSON.parse(process.env.GRAPHQL_HEADERS || '{}'),
  fetch: async (uri, init) => {
    const res = await fetch(uri, init);
    contentType = res.headers.get('content-type');
    contentEncoding = res.headers.get('content-encoding') ?? '';
    return res;
  },
});
const client = new ApolloClient({ link, cache: new InMemoryCache(), incrementalHandler: new Defer20220824Handler() });
const results = [];
await new Promise((resolve) => {
  const policy = process.env.APOLLO_FETCH_POLICY;
  const sub = client.watchQuery({ query: gql(process.env.APOLLO_QUERY), ...(policy ? { fetchPolicy: policy } : {}) }).subscribe({
    next: (r) => {
      if (r.loading && r.data === undefined) return; // the loading state before any part
      results.push({ data: r.data, dataState: r.dataState, errors: r.error?.errors ?? r.error?.message });
      if (r.dataState === 'complete' || r.error) { sub.unsubscribe(); resolve(); }
    },
    error: (e) => { results.push({ error: e.message }); resolve(); },
  });
});
console.log(JSON.stringify({ contentType, contentEncoding, results }));
