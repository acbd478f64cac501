// snippet-harness.mjs is what e2e/clients_snippets_test.go runs each js
// snippet of docs/clients.md with: the program it writes imports this
// module first, then holds the snippet as written, then the test's tail.
// It gives the snippet the page a browser would: a fetch and a WebSocket
// that reach the gateway at SNIPPET_BASE (a relative URL, or the docs'
// localhost:8080, is the gateway's), and the free names the snippets use
// (token, id, ref, client, PAYMENT_UPDATED, render, reread, terminal,
// resubscribeUnlessTerminal) as globals, the functions fakes that record
// their calls. It prints one JSON report when the tail calls finish(), at
// the first render when SNIPPET_UNTIL is "render", or after SNIPPET_RUN_MS.
//
// Environment: SNIPPET_BASE (http://127.0.0.1:port), SNIPPET_HEADERS (the
// demo pair as JSON), SNIPPET_SCOPE (the session token's scope as JSON;
// none: no token), SNIPPET_CLIENT ("apollo-ws", "urql-ws" or none),
// SNIPPET_PAYMENT_UPDATED (the subscription document), SNIPPET_ID and
// SNIPPET_REF (the ids), SNIPPET_UNTIL, SNIPPET_RUN_MS.
import { parse } from 'graphql';
import WS from 'ws';

const env = process.env;
const base = new URL(env.SNIPPET_BASE);
let started = Date.now();
const report = { calls: [], subscribes: [], requests: [], uncaught: [], uncaughtTotal: 0, consoleErrors: [], result: null };
const record = (name, arg) => report.calls.push({ name, ms: Date.now() - started, arg: arg === undefined ? null : arg });

// to the gateway: a relative URL (a page served by the gateway's origin),
// or the docs' http://localhost:8080 (the test's gateway has its own port).
function rewrite(u) {
  const url = new URL(String(u), base);
  if (url.host === base.host || url.host === 'localhost:8080') {
    url.host = base.host;
    url.protocol = url.protocol.startsWith('ws') ? 'ws:' : 'http:';
  }
  return url;
}

const nodeFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  let url, req;
  if (input instanceof Request) {
    url = rewrite(input.url);
    req = new Request(url, input);
  } else {
    url = rewrite(input);
  }
  const headers = new Headers(req ? req.headers : init.headers);
  const entry = { method: (req ? req.method : init.method) || 'GET', path: url.pathname };
  if (typeof init.body === 'string') {
    try {
      const body = JSON.parse(init.body);
      for (const op of Array.isArray(body) ? body : [body]) {
        entry.query = typeof op.query === 'string';
        entry.persisted = !!op.extensions?.persistedQuery;
        entry.variables = op.variables ?? null;
      }
    } catch { /* not JSON */ }
  }
  if (headers.get('accept') === 'text/event-stream') { // graphql-sse's subscribe
    report.subscribes.push({ ms: Date.now() - started, over: 'sse', lastEventId: headers.get('last-event-id'), variables: entry.variables ?? null });
  }
  report.requests.push(entry);
  const res = await (req ? nodeFetch(req) : nodeFetch(url, init));
  entry.status = res.status;
  return res;
};

// A browser's WebSocket (Node 20 has none): the ws package's, its URL
// mapped as fetch's, its subscribe messages counted.
globalThis.WebSocket = class extends WS {
  constructor(url, protocols) {
    super(rewrite(url), protocols);
    const send = this.send.bind(this);
    this.send = (data, ...rest) => {
      try {
        const m = JSON.parse(data);
        if (m.type === 'subscribe') {
          report.subscribes.push({ ms: Date.now() - started, over: 'ws', variables: m.payload?.variables ?? null });
        }
      } catch { /* not JSON */ }
      return send(data, ...rest);
    };
  }
};

// A page logs what it does not catch and goes on; so does this one (the
// first ten kept, all counted).
const uncaught = (e) => { if (report.uncaughtTotal++ < 10) report.uncaught.push(String(e?.stack ?? e)); };
process.on('uncaughtException', uncaught);
process.on('unhandledRejection', uncaught);
const consoleError = console.error;
console.error = (...args) => report.consoleErrors.push(args.map((a) => String(a?.message ?? JSON.stringify(a) ?? a)).join(' '));

let finished = false;
export function finish(result) {
  if (finished) return;
  finished = true;
  report.result = result ?? null;
  process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(0));
}

export { parse };

let lastStatus;
globalThis.render = (v) => {
  record('render', v ?? null);
  lastStatus = v?.status ?? v?.paymentStatus ?? lastStatus;
  if (env.SNIPPET_UNTIL === 'render' && v) setTimeout(finish);
};
globalThis.reread = () => { record('reread'); return Promise.resolve(); };
globalThis.terminal = () => {
  const t = ['SUCCEEDED', 'FAILED', 'CANCELLED', 'REFUNDED'].includes(lastStatus);
  record('terminal', t);
  return t;
};
globalThis.resubscribeUnlessTerminal = () => record('resubscribeUnlessTerminal');
globalThis.id = env.SNIPPET_ID;
globalThis.ref = env.SNIPPET_REF;

const pair = JSON.parse(env.SNIPPET_HEADERS || '{}');
if (env.SNIPPET_SCOPE) {
  const res = await nodeFetch(new URL('/auth/token', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...pair },
    body: JSON.stringify({ ttlSeconds: 900, scope: JSON.parse(env.SNIPPET_SCOPE) }),
  });
  const body = await res.json();
  if (!body.token) {
    consoleError('snippet-harness: no token:', res.status, JSON.stringify(body));
    process.exit(2);
  }
  globalThis.token = body.token;
}
if (env.SNIPPET_PAYMENT_UPDATED) globalThis.PAYMENT_UPDATED = parse(env.SNIPPET_PAYMENT_UPDATED);

// The client a resume snippet's "client" stands for, over graphql-ws with
// the token in connection_init, as each library's documentation sets it up.
const wsURL = new URL('/graphql', base);
wsURL.protocol = 'ws:';
const connectionParams = { Authorization: `Bearer ${globalThis.token}` };
switch (env.SNIPPET_CLIENT || '') {
  case '':
    break;
  case 'apollo-ws': {
    const { ApolloClient, InMemoryCache } = await import('@apollo/client');
    const { GraphQLWsLink } = await import('@apollo/client/link/subscriptions');
    const { createClient } = await import('graphql-ws');
    globalThis.client = new ApolloClient({
      link: new GraphQLWsLink(createClient({ url: wsURL.href, connectionParams })),
      cache: new InMemoryCache(),
    });
    break;
  }
  case 'urql-ws': {
    const { Client, cacheExchange, fetchExchange, subscriptionExchange } = await import('@urql/core');
    const { createClient } = await import('graphql-ws');
    const ws = createClient({ url: wsURL.href, connectionParams });
    globalThis.client = new Client({
      url: new URL('/graphql', base).href,
      exchanges: [cacheExchange, fetchExchange, subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || '' };
          return { subscribe: (sink) => ({ unsubscribe: ws.subscribe(input, sink) }) };
        },
      })],
    });
    break;
  }
  default:
    consoleError('snippet-harness: unknown SNIPPET_CLIENT', env.SNIPPET_CLIENT);
    process.exit(2);
}

// The snippet runs from here: SNIPPET_RUN_MS from now.
started = Date.now();
setTimeout(() => finish(), Number(env.SNIPPET_RUN_MS || 10000));
