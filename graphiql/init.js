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
