// apollo.mjs runs one query with Apollo Client 4 over POST (its HttpLink,
// its default Accept) against the gateway at GRAPHQL_URL with the headers
// in GRAPHQL_HEADERS, and prints what the application sees: the data, or
// the error's class and its GraphQL errors. The query and its variables
// come as JSON in APOLLO_QUERY and APOLLO_VARIABLES.
import { ApolloClient, InMemoryCache, HttpLink, gql } from '@apollo/client';

const client = new ApolloClient({
  link: new HttpLink({ uri: process.env.GRAPHQL_URL, headers: JSON.parse(process.env.GRAPHQL_HEADERS || '{}') }),
  cache: new InMemoryCache(),
});
try {
  const result = await client.query({
    query: gql(process.env.APOLLO_QUERY),
    variables: JSON.parse(process.env.APOLLO_VARIABLES || '{}'),
    fetchPolicy: 'no-cache',
  });
  console.log(JSON.stringify({ data: result.data, error: result.error ? { name: result.error.name, errors: result.error.errors } : undefined }));
} catch (e) {
  console.log(JSON.stringify({ error: { name: e.name, message: e.message, errors: e.errors } }));
}
