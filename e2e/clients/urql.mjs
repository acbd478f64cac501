// urql.mjs runs one query with urql's core client (its fetchExchange with
// its defaults: GET for queries that fit in a URL, its own Accept) against
// the gateway at GRAPHQL_URL with the headers in GRAPHQL_HEADERS, and
// prints every result the application is handed, in order (its data,
// hasNext and error), and the method and Content-Type of the exchange.
// The query comes in URQL_QUERY.
import { Client, fetchExchange, gql } from '@urql/core';

let method = '', contentType = '';
const client = new Client({
  url: process.env.GRAPHQL_URL,
  exchanges: [fetchExchange],
  requestPolicy: 'network-only',
  fetchOptions: { headers: JSON.parse(process.env.GRAPHQL_HEADERS || '{}') },
  fetch: async (uri, init) => {
    method = init.method;
    const res = await fetch(uri, init);
    contentType = res.headers.get('content-type');
    return res;
  },
});
const results = [];
await new Promise((resolve) => {
  const { unsubscribe } = client.query(gql(process.env.URQL_QUERY), {}).subscribe((r) => {
    results.push({ data: r.data, hasNext: r.hasNext, error: r.error?.message });
    if (!r.hasNext || r.error) { setTimeout(unsubscribe); resolve(); }
  });
});
console.log(JSON.stringify({ method, contentType, results }));
