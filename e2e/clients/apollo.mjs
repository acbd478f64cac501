// apollo.mjs runs one query with Apollo Client 4 over POST (its HttpLink,
// its default Accept) against the gateway at GRAPHQL_URL with the headers
// in GRAPHQL_HEADERS, and prints what the application sees: the data, or
// the error's class and its GraphQL errors. The query and its variables
// come as JSON in APOLLO_QUERY and APOLLO_VARIABLES. With APOLLO_APQ=1
// the link chain starts with Apollo's PersistedQueryLink (a mobile app's
// setup), and the output lists the HTTP statuses of the requests made.
import { createHash } from 'node:crypto';
import { ApolloClient, InMemoryCache, HttpLink, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';

const statuses = [];
let link = new HttpLink({
  uri: process.env.GRAPHQL_URL,
  headers: JSON.parse(process.env.GRAPHQL_HEADERS || '{}'),
  fetch: async (uri, init) => { const res = await fetch(uri, init); statuses.push(res.status); return res; },
});
if (process.env.APOLLO_APQ === '1') {
  link = new PersistedQueryLink({ sha256: (s) => createHash('sha256').update(s).digest('hex') }).concat(link);
}
const client = new ApolloClient({ link, cache: new InMemoryCache() });
try {
  const result = await client.query({
    query: gql(process.env.APOLLO_QUERY),
    variables: JSON.parse(process.env.APOLLO_VARIABLES || '{}'),
    fetchPolicy: 'no-cache',
  });
  console.log(JSON.stringify({ data: result.data, statuses }));
} catch (e) {
  console.log(JSON.stringify({ error: { name: e.name, message: e.message, errors: e.errors }, statuses }));
}
