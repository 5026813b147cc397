// One filestack-js flow against a Stowage server, for tests/sdk/test_js_sdk.py.
// Usage: node flows.js '<json>' with {api, cdn, apikey, flow, secret?, policy?, ...};
// prints one JSON line: what the SDK returned, for the Python side to check.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const { pointFilestackAt } = require('./shim');
const filestack = require('filestack-js');

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

function client(input) {
  const options = {};
  if (input.policy) {
    options.security = filestack.getSecurity(input.policy, input.secret);
  }
  return pointFilestackAt(filestack.init(input.apikey, options), input.api, input.cdn);
}

const flows = {
  async upload(input) {
    const c = client(input);
    const file = await c.upload(input.path, input.options || {}, input.store || {});
    return { handle: file.handle, url: file.url, status: file.status, key: file.key, size: file.size };
  },
  async storeURL(input) {
    return client(input).storeURL(input.url, input.store || {});
  },
  async download(input) {
    const res = await client(input).download(input.handle);
    return { status: res.status, sha256: sha256(res.data), type: res.headers['content-type'] };
  },
  async link(input) {
    // A Filelink with tasks, fetched through the SDK's own request layer.
    const c = client(input);
    const link = new filestack.Filelink(input.handle, input.apikey);
    if (input.policy) {
      link.security(c.session.policy ? { policy: c.session.policy, signature: c.session.signature } : {});
    }
    if (input.cache !== undefined) {
      link.cache(input.cache);
    }
    const url = link.toString();
    const res = await filestack.FsRequest.get(url, { blobResponse: true, filestackHeaders: false });
    return { url, status: res.status, sha256: sha256(res.data), cacheControl: res.headers['cache-control'] };
  },
  async transform(input) {
    // client.transform builds <cdn>/<APIKEY>/<tasks>/<source> (security added from the
    // session); the answer is fetched with the SDK's own request layer.
    const url = client(input).transform(input.source, input.options || {});
    const res = await filestack.FsRequest.get(url, { blobResponse: true, filestackHeaders: false });
    const body = Buffer.from(res.data).toString('base64');
    return { url, status: res.status, type: res.headers['content-type'], body };
  },
  transformUrl(input) {
    // Only the URL client.transform builds (an answer that is JSON, not a file: video_convert).
    return { url: client(input).transform(input.source, input.options || {}) };
  },
  transformUrls(input) {
    // The URLs client.transform builds for many option sets (in its base64 form with
    // input.b64); the SDK's own refusals (its schema validation) as errors, for the
    // Python side to skip.
    const c = client(input);
    return input.optionSets.map((options) => {
      try {
        return { url: c.transform(input.source, options, Boolean(input.b64)) };
      } catch (err) {
        return { error: String((err && err.message) || err) };
      }
    });
  },
  async retrieve(input) {
    const out = await client(input).retrieve(input.handle, input.options || {});
    return Buffer.isBuffer(out) || typeof out === 'string' ? { sha256: sha256(out) } : out;
  },
  async metadata(input) {
    return client(input).metadata(input.handle, input.options || {});
  },
  async remove(input) {
    const res = await client(input).remove(input.handle);
    return { status: res.status, data: res.data };
  },
  async overwrite(input) {
    // filestack-js has no overwrite call: the File API's POST /api/file/<handle>, sent
    // with the SDK's request layer and its getSecurity policy, as Filestack documents it.
    const c = client(input);
    const res = await filestack.FsRequest.post(
      `${c.session.urls.fileApiUrl}/${input.handle}`,
      fs.readFileSync(input.path),
      {
        params: { key: input.apikey, policy: c.session.policy, signature: c.session.signature },
        headers: { 'content-type': 'application/octet-stream' },
        filestackHeaders: false,
      },
    );
    return res.data;
  },
};

(async () => {
  const input = JSON.parse(process.argv[2]);
  try {
    const out = await flows[input.flow](input);
    process.stdout.write(JSON.stringify({ ok: true, result: out }) + '\n');
  } catch (err) {
    const details = err && (err.details || (err.response && { status: err.response.status, data: err.response.data }));
    process.stdout.write(JSON.stringify({ ok: false, error: String(err && err.message), details }) + '\n');
  }
})();
