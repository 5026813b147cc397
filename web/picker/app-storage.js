// fromSources 'customsource': the files already stored under the app, listed from the API
// host's GET /api/files with the client's policy and signature (listing needs one with
// read or stat: a list of names is sensitive). Picking one links it: no bytes move, the
// picker answers the stored file's handle and CDN link.
import { UIPlugin } from '@uppy/core';
import { h } from 'preact';

const PAGE = 50;

// What the picker's upload step answers for a linked file, as client.upload would.
export function linked(row, client) {
  const cdn = client.session.urls.cdnUrl;
  return { ...row, url: `${cdn}/${row.handle}`, status: 'Stored' };
}

export class AppStorage extends UIPlugin {
  constructor(uppy, opts) {
    super(uppy, opts);
    this.id = 'StowageStorage';
    this.title = opts.title || 'Stored files';
    this.type = 'acquirer';
    this.icon = () => h('svg', { width: 32, height: 32, viewBox: '0 0 32 32' },
      h('path', { d: 'M7 9h18v16H7zM7 13h18M12 9V6h8v3', stroke: '#5a5e69', fill: 'none', 'stroke-width': 2 }));
  }

  listUrl(after) {
    const s = this.opts.client.session;
    const query = new URLSearchParams({ key: s.apikey, limit: String(PAGE) });
    if (s.policy && s.signature) {
      query.set('policy', s.policy);
      query.set('signature', s.signature);
    }
    if (after) query.set('after', after);
    return `${s.urls.fileApiUrl}s?${query}`;
  }

  // customSourceContainer and customSourcePath narrow the list (a container, a key prefix).
  wanted(row) {
    const { container, path } = this.opts;
    return (!container || row.container === container) && (!path || (row.key || '').startsWith(path));
  }

  async load(after) {
    this.setPluginState({ loading: true });
    const state = this.getPluginState();
    try {
      const answer = await fetch(this.listUrl(after));
      const body = await answer.json();
      if (!answer.ok) throw new Error((body.error && body.error.message) || `HTTP ${answer.status}`);
      const rows = (after ? state.rows || [] : []).concat(body.files.filter((r) => this.wanted(r)));
      this.setPluginState({ rows, next: body.next, loading: false, error: null });
    } catch (err) {
      this.setPluginState({ loading: false, error: err.message || String(err) });
    }
  }

  pick(row) {
    try {
      this.uppy.addFile({
        name: row.filename || row.handle, type: row.mimetype || 'application/octet-stream',
        data: new Blob([]), source: 'customsource', meta: { stored: row }, isRemote: false,
      });
      const dashboard = this.uppy.getPlugin('Dashboard');
      if (dashboard) dashboard.hideAllPanels();
    } catch (err) {
      this.uppy.info((err && err.message) || String(err), 'error', 5000);
    }
  }

  render() {
    const { rows, next, loading, error } = this.getPluginState();
    if (!this.started) { // the first time the tab shows: load outside of rendering
      this.started = true;
      setTimeout(() => this.load(null), 0);
    }
    const item = (row) => h('li', { style: 'display:flex;gap:8px;align-items:center;padding:4px 0' },
      h('span', { style: 'flex:1' }, `${row.filename || row.handle} (${row.size} B)`),
      h('button', { type: 'button', class: 'stowage-pick uppy-u-reset uppy-c-btn uppy-c-btn-primary', style: 'padding:4px 12px', 'data-handle': row.handle, onClick: () => this.pick(row) }, 'Pick'));
    return h('div', { class: 'stowage-storage', style: 'padding:16px 24px;overflow:auto;width:100%' },
      error ? h('p', { class: 'stowage-storage-error' }, error) : null,
      h('ul', { style: 'list-style:none;margin:0;padding:0' }, (rows || []).map(item)),
      loading ? h('p', null, 'Loading…') : null,
      next && !loading ? h('button', { type: 'button', class: 'uppy-u-reset uppy-c-btn', onClick: () => this.load(next) }, 'More') : null);
  }

  install() {
    this.setPluginState({ rows: null, next: null, loading: false, error: null });
    const { target } = this.opts;
    if (target) this.mount(target, this);
  }

  uninstall() {
    this.unmount();
  }
}
