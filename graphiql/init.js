// Starts GraphiQL with the options the gateway put in the page's
// <script type="application/json" id="graphiql-options"> block. Kept in a
// file of its own so that the page's Content-Security-Policy can forbid
// inline scripts.
(function () {
  'use strict';
  var opts = JSON.parse(document.getElementById('graphiql-options').textContent);
  var props = {
    fetcher: GraphiQL.createFetcher({ url: opts.endpoint }),
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
})();
