// audit.mjs runs graphql-http's GraphQL-over-HTTP server audits against
// the gateway at GRAPHQL_URL, sending the headers in GRAPHQL_HEADERS (a
// JSON object: the demo credentials) with every request, and prints one
// JSON array of {id, name, status, reason}. e2e/clients_test.go judges it.
// AUDIT_PACE_MS, when set, waits that long before each audit: anonymous
// (GRAPHQL_HEADERS {}), the audits' requests otherwise outrun the
// per-address anonymous budget (RATE_LIMIT_ANONYMOUS_PER_ADDRESS_*) and
// get 429s.
import { serverAudits } from 'graphql-http';

const url = process.env.GRAPHQL_URL;
const extra = JSON.parse(process.env.GRAPHQL_HEADERS || '{}');
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return fetch(input, { ...init, headers });
};
const pace = Number(process.env.AUDIT_PACE_MS || 0);
const results = [];
for (const audit of serverAudits({ url, fetchFn })) {
  if (pace > 0) await new Promise((resolve) => setTimeout(resolve, pace));
  const r = await audit.fn();
  results.push({ id: audit.id, name: audit.name, status: r.status, reason: r.reason ?? '' });
}
console.log(JSON.stringify(results));
