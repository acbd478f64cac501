// audit.mjs runs graphql-http's GraphQL-over-HTTP server audits against
// the gateway at GRAPHQL_URL, sending the headers in GRAPHQL_HEADERS (a
// JSON object: the demo credentials) with every request, and prints one
// JSON array of {id, name, status, reason}. e2e/clients_test.go judges it.
import { serverAudits } from 'graphql-http';

const url = process.env.GRAPHQL_URL;
const extra = JSON.parse(process.env.GRAPHQL_HEADERS || '{}');
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return fetch(input, { ...init, headers });
};
const results = [];
for (const audit of serverAudits({ url, fetchFn })) {
  const r = await audit.fn();
  results.push({ id: audit.id, name: audit.name, status: r.status, reason: r.reason ?? '' });
}
console.log(JSON.stringify(results));
