// filestack-js with only its `cname` option set, against Stowage behind TLS, for
// tests/sdk/test_cname.py. Usage: node cname.js '<json>' with {cname, apikey, path, png,
// source}; prints one JSON line with what each call answered.
//
// Nothing of the SDK is changed. What the test harness adds, in this process only:
// *.stowage.test resolves to 127.0.0.1 (as curl --resolve does), and, because the test's
// TLS port is not 443, a `host: "name:port"` that the SDK's Node adapter hands to
// https.request is split into hostname + port (Node would look up "name:port").
// The test CA comes from NODE_EXTRA_CA_CERTS.
'use strict';
const crypto = require('crypto');
const dns = require('dns');
const fs = require('fs');
const https = require('https');

const lookup = dns.lookup;
dns.lookup = function (host, ...rest) {
  return lookup.call(this, /\.stowage\.test$/.test(host) ? '127.0.0.1' : host, ...rest);
};
const request = https.request;
https.request = function (options, ...rest) {
  if (options && typeof options === 'object' && /:\d+$/.test(options.host || '')) {
    const at = options.host.lastIndexOf(':');
    options = { ...options, hostname: options.host.slice(0, at), servername: options.host.slice(0, at) };
    delete options.host;
  }
  return request.call(this, options, ...rest);
};

const filestack = require('filestack-js');

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

async function get(url) {
  const res = await filestack.FsRequest.get(url, { blobResponse: true, filestackHeaders: false });
  return { status: res.status, type: res.headers['content-type'], data: Buffer.from(res.data) };
}

async function main(input) {
  const client = filestack.init(input.apikey, { cname: input.cname });
  const out = { urls: { ...client.session.urls } };
  const up = await client.upload(input.path, { partSize: 5 * 1024 * 1024 });
  out.upload = { handle: up.handle, url: up.url, status: up.status };
  out.metadata = await client.metadata(up.handle, { sha256: true, size: true });
  const down = await client.download(up.handle);
  out.download = { status: down.status, sha256: sha256(Buffer.from(down.data)) };
  const png = await client.upload(input.png);
  const url = client.transform(png.handle, { resize: { width: 40 } });
  const shown = await get(url);
  out.transform = { url, status: shown.status, type: shown.type, body: shown.data.toString('base64') };
  out.storeURL = await client.storeURL(input.source);
  out.prefetch = await client.prefetch({ pickerOptions: { maxFiles: 2 } });
  try {
    await filestack.FsRequest.post(`${client.session.urls.cloudApiUrl}/folder/list`, {
      apikey: input.apikey, clouds: { googledrive: { path: '/' } },
    });
    out.cloud = 'answered';
  } catch (err) {
    out.cloud = { status: err.response && err.response.status, data: err.response && err.response.data };
  }
  return out;
}

main(JSON.parse(process.argv[2])).then(
  (result) => console.log(JSON.stringify({ ok: true, result })),
  (err) => {
    console.log(JSON.stringify({ ok: false, error: String(err && err.message), details: err && err.details }));
    process.exitCode = 1;
  },
);
