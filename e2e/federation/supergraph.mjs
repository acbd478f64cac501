// The supergraph of e2e/federation_test.go: paygraph in its subgraph mode
// (FEDERATION=true) beside a small orders subgraph, 20 orders over the 10
// payments of PAYMENT_IDS (comma-separated).
//
//   node supergraph.mjs compose <paygraph /graphql URL>
//       composes paygraph's _service SDL with the orders subgraph's
//       (@theguild/federation-composition) and prints the supergraph SDL,
//       or the composition's errors and exits 1.
//   node supergraph.mjs serve <paygraph /graphql URL> <supergraph file>
//       serves the orders subgraph and an @apollo/gateway over that
//       supergraph, forwarding the caller's x-api-key, x-api-secret and
//       Authorization headers to paygraph; prints "gateway <URL>".
import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { composeServices } from '@theguild/federation-composition';
import { parse } from 'graphql';

// The URLs the supergraph names (its fixture is checked in); serve points
// each subgraph at where it runs.
const named = { paygraph: 'http://paygraph.invalid/graphql', orders: 'http://orders.invalid/graphql' };
const forwarded = ['x-api-key', 'x-api-secret', 'authorization'];

const ordersSDL = `extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@external"])
type Order @key(fields: "id") { id: ID! total: Int! payment: Payment }
type Payment @key(fields: "id", resolvable: false) { id: ID! }
type Query { orders: [Order!]! }
`;

const paymentIDs = (process.env.PAYMENT_IDS || '').split(',').filter(Boolean);
const orders = Array.from({ length: 20 }, (_, i) => ({ id: `order-${i + 1}`, total: 100 * (i + 1), payment: paymentIDs.length ? { id: paymentIDs[i % paymentIDs.length] } : null }));

async function paygraphSDL(url) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ _service { sdl } }' }) });
  const body = await res.json();
  if (!body.data?._service?.sdl) throw new Error(`paygraph's _service: ${JSON.stringify(body)}`);
  return body.data._service.sdl;
}

async function compose(url) {
  const result = composeServices([
    { name: 'paygraph', url: named.paygraph, typeDefs: parse(await paygraphSDL(url)) },
    { name: 'orders', url: named.orders, typeDefs: parse(ordersSDL) },
  ]);
  if (result.errors?.length) {
    for (const e of result.errors) console.error(e.message);
    process.exit(1);
  }
  process.stdout.write(result.supergraphSdl);
}

async function serve(url, file) {
  const subgraph = new ApolloServer({ schema: buildSubgraphSchema([{ typeDefs: parse(ordersSDL), resolvers: { Query: { orders: () => orders } } }]) });
  const { url: ordersURL } = await startStandaloneServer(subgraph, { listen: { host: '127.0.0.1', port: 0 } });
  const at = { paygraph: url, orders: ordersURL };
  const gateway = new ApolloGateway({
    supergraphSdl: readFileSync(file, 'utf8'),
    buildService: ({ name }) => new RemoteGraphQLDataSource({
      url: at[name],
      willSendRequest({ request, context }) {
        for (const h of forwarded) {
          if (context.headers?.[h]) request.http.headers.set(h, context.headers[h]);
        }
      },
    }),
  });
  const server = new ApolloServer({ gateway });
  const { url: gatewayURL } = await startStandaloneServer(server, {
    listen: { host: '127.0.0.1', port: 0 },
    context: async ({ req }) => ({ headers: req.headers }),
  });
  console.log(`gateway ${gatewayURL}`);
}

const [mode, url, file] = process.argv.slice(2);
try {
  if (mode === 'compose') await compose(url);
  else if (mode === 'serve') await serve(url, file);
  else throw new Error(`unknown mode ${mode}`);
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
