// Starts GraphiQL with the options the gateway put in the page's
// <script type="application/json" id="graphiql-options"> block. Kept in a
// file of its own so that the page's Content-Security-Policy can forbid
// inline scripts.
(function () {
  'use strict';
  var opts = JSON.parse(document.getElementById('graphiql-options').textContent);
  // Subscriptions go over graphql-transport-ws (graphql-ws is in the
  // bundle); GraphiQL sends the headers editor's values (or the token
  // box's Authorization) as the connection_init payload, where the gateway
  // reads credentials as it reads headers. connect-src 'self' covers ws:
  // and wss: to the same host (CSP level 3).
  var wsURL = new URL(opts.endpoint, location.href);
  wsURL.protocol = wsURL.protocol === 'https:' ? 'wss:' : 'ws:';
  var fetcher = GraphiQL.createFetcher({ url: opts.endpoint, subscriptionUrl: wsURL.href });
  if (opts.tokenReplaces) {
    fetcher = withTokenBox(fetcher, opts.tokenReplaces);
  }
  if (opts.restCalls) {
    fetcher = withRESTCalls(fetcher);
  }
  var props = {
    fetcher: fetcher,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false,
    // Open the headers tab so that the place for the credentials is seen.
    defaultEditorToolsVisibility: 'headers',
  };
  if (opts.headers) {
    props.headers = opts.headers;
    props.defaultHeaders = opts.headers;
  }
  if (opts.defaultQuery) {
    props.defaultQuery = opts.defaultQuery;
  }
  var root = document.getElementById('graphiql');
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, props));

  // withRESTCalls draws the "REST calls" panel below GraphiQL and returns
  // a fetcher that shows in it the cost receipt (extensions.cost) of each
  // answer the caller gets: for @defer, the final part's. Everything is
  // written as text (never as HTML): ids come from the caller's own query.
  function withRESTCalls(next) {
    var panel = document.createElement('section');
    panel.className = 'graphiql-rest';
    panel.id = 'graphiql-rest';
    panel.setAttribute('aria-label', 'REST calls');
    var title = document.createElement('h2');
    title.textContent = 'REST calls';
    var summary = document.createElement('p');
    summary.className = 'graphiql-rest-summary';
    summary.textContent = 'Run a query to see the REST calls it makes.';
    var table = document.createElement('table');
    panel.appendChild(title);
    panel.appendChild(summary);
    panel.appendChild(table);
    document.body.appendChild(panel);
    document.body.classList.add('graphiql-with-rest');

    function cell(row, tag, text) {
      var c = document.createElement(tag);
      c.textContent = String(text);
      row.appendChild(c);
    }
    function show(result) {
      var cost = result && result.extensions && result.extensions.cost;
      if (!cost) { return; }
      var parts = ['estimated ' + cost.estimated, 'made ' + cost.made, 'saved ' + cost.saved, 'retries ' + cost.retries];
      if (cost.unmade) {
        parts.push('not made: ' + cost.unmade.deduplicated + ' deduplicated, ' + cost.unmade.shortPages +
          ' short pages, ' + cost.unmade.notReached + ' not reached');
      }
      if (cost.budget) {
        parts.push('REST-call budget left ' + cost.budget.remaining + ' of ' + cost.budget.limit);
      }
      summary.textContent = parts.join(' · ');
      table.textContent = '';
      if (!cost.calls) {
        if (cost.made > 0) {
          var note = document.createElement('caption');
          note.textContent = 'The REST inspector is off on this gateway (REST_INSPECTOR).';
          table.appendChild(note);
        }
        return;
      }
      var head = document.createElement('tr');
      ['route', 'id', 'status', 'ms', 'bytes', 'retries', 'deduplicated'].forEach(function (h) { cell(head, 'th', h); });
      table.appendChild(head);
      cost.calls.forEach(function (c) {
        var row = document.createElement('tr');
        row.className = 'graphiql-rest-call';
        cell(row, 'td', c.route);
        cell(row, 'td', c.id || '');
        cell(row, 'td', c.status || 'no answer');
        cell(row, 'td', c.durationMs.toFixed(1));
        cell(row, 'td', c.bytes);
        cell(row, 'td', c.retries);
        cell(row, 'td', c.deduplicated ? 'shared by ' + (c.deduplicated + 1) + ' asks' : 'no');
        table.appendChild(row);
      });
    }
    return function (params, fopts) {
      var r = next(params, fopts);
      if (r && typeof r.then === 'function') {
        return r.then(function (v) {
          if (v && typeof v[Symbol.asyncIterator] === 'function') { return watch(v); }
          show(v);
          return v;
        });
      }
      if (r && typeof r[Symbol.asyncIterator] === 'function') { return watch(r); }
      return r;
    };
    // watch passes an incremental answer's parts on, showing each.
    function watch(iterable) {
      var out = {};
      out[Symbol.asyncIterator] = function () {
        var it = iterable[Symbol.asyncIterator]();
        return {
          next: function () {
            return it.next().then(function (step) {
              if (!step.done) { show(step.value); }
              return step;
            });
          },
          return: function (v) { return it.return ? it.return(v) : Promise.resolve({ done: true, value: v }); },
        };
      };
      return out;
    }
  }

  // withTokenBox draws the session-token box above GraphiQL and returns a
  // fetcher that, while the box holds a token, sends it as
  // "Authorization: Bearer <token>" instead of the headers it replaces
  // (the gateway refuses a request that sends both). The token is kept
  // in the box only: never stored, never sent anywhere else.
  function withTokenBox(next, replaces) {
    var bar = document.createElement('form');
    bar.className = 'graphiql-token';
    var label = document.createElement('label');
    label.textContent = 'Session token (instead of ' + replaces.join(' and ') + '): ';
    var input = document.createElement('input');
    input.type = 'password';
    input.autocomplete = 'off';
    input.spellcheck = false;
    input.placeholder = 'v4.local.… from POST /auth/token';
    input.id = 'graphiql-token';
    label.appendChild(input);
    bar.appendChild(label);
    bar.addEventListener('submit', function (e) { e.preventDefault(); });
    document.body.insertBefore(bar, document.getElementById('graphiql'));
    document.body.classList.add('graphiql-with-token');
    var drop = {};
    replaces.concat(['authorization']).forEach(function (h) { drop[h.toLowerCase()] = true; });
    return function (params, fopts) {
      var token = input.value.trim();
      if (token) {
        var headers = {};
        var given = (fopts && fopts.headers) || {};
        Object.keys(given).forEach(function (k) {
          if (!drop[k.toLowerCase()]) { headers[k] = given[k]; }
        });
        headers.Authorization = 'Bearer ' + token;
        fopts = Object.assign({}, fopts, { headers: headers });
      }
      return next(params, fopts);
    };
  }
})();
