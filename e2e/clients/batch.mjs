// batch.mjs sends the queries of QUERIES (a JSON array of query texts) at
// once through Apollo Client 4's BatchHttpLink (one POST with a JSON array
// body) to the gateway at GRAPHQL_URL with the headers in GRAPHQL_HEADERS,
// and prints what each query's caller sees: its data, or its error's
// class, message and GraphQL errors; and the HTTP statuses of the requests
// made.
import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { BatchHttpLink } from '@apollo/client/link/batch-http';

const statuses = [];
const link = new BatchHttpLink({
  uri: process.env.GRAPHQL_URL,
  headers: JSON.parse(process.env.GRAPHQL_HEADERS || '{}'),
  batchMax: Number(process.env.BATCH_MAX || 10),
  batchInterval: 20,
  fetch: async (uri, init) => { const res = await fetch(uri, init); statuses.push(res.status); return res; },
});
const client = new ApolloClient({ link, cache: new InMemoryCache() });
const run = async (query) => {
  try {
    const result = await client.query({ query: gql(query), fetchPolicy: 'no-cache' });
    return { data: result.data };
  } catch (e) {
    return { error: { name: e.name, message: e.message, errors: e.errors } };
  }
};
const results = await Promise.all(JSON.parse(process.env.QUERIES).map(run));
console.log(JSON.stringify({ results, statuses }));
