// Point the official filestack-js SDK at a Stowage server (no SDK code changed).
//
// filestack-js keeps its hosts in one `urls` object (client.session.urls is the module's
// config.urls, which Filelink reads for CDN links): assign Stowage's addresses to it.
// Its Node adapter passes `host: "127.0.0.1:8080"` to http.request, which drops a
// non-default port; requests whose host carries a port are split into hostname + port.
'use strict';
const http = require('http');

const request = http.request;
http.request = function (options, ...rest) {
  if (options && typeof options === 'object' && !options.hostname && /:\d+$/.test(options.host || '')) {
    const at = options.host.lastIndexOf(':');
    options = { ...options, hostname: options.host.slice(0, at), port: options.host.slice(at + 1) };
  }
  return request.call(this, options, ...rest);
};

function pointFilestackAt(client, apiRoot, cdnRoot) {
  Object.assign(client.session.urls, {
    fileApiUrl: `${apiRoot}/api/file`,
    uploadApiUrl: apiRoot,
    processUrl: apiRoot,
    cloudApiUrl: apiRoot,
    cdnUrl: cdnRoot,
  });
  return client;
}

module.exports = { pointFilestackAt };
