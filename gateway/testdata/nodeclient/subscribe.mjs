// A real client library against the gateway: graphql-sse's own client
// (distinct connections mode) subscribes to one payment and prints each
// event as a JSON line, then "complete". Used by gateway/nodeclient_test.go.
//   node subscribe.mjs <gateway url> <payment id>   (credentials in PAYGRAPH_KEY, PAYGRAPH_SECRET)
import { createClient } from 'graphql-sse';

const [url, id] = process.argv.slice(2);
const client = createClient({
  url: url + '/graphql',
  headers: { 'x-api-key': process.env.PAYGRAPH_KEY, 'x-api-secret': process.env.PAYGRAPH_SECRET },
  retryAttempts: 0,
});
try {
  for await (const ev of client.iterate({
    query: 'subscription($id: ID!) { paymentUpdated(id: $id) { id status } }',
    variables: { id },
  })) {
    console.log(JSON.stringify(ev));
  }
  console.log('complete');
} catch (err) {
  console.error('error', err instanceof Error ? err.message : JSON.stringify(err));
  process.exit(1);
} finally {
  client.dispose();
}
