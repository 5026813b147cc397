// fromSources 'url': a link typed into the picker, stored by Stowage fetching it
// (client.storeURL) rather than by the browser, which the source's CORS would stop.
import { UIPlugin } from '@uppy/core';
import { h } from 'preact';

export class UrlSource extends UIPlugin {
  constructor(uppy, opts) {
    super(uppy, opts);
    this.id = 'StowageUrl';
    this.title = 'Link (URL)';
    this.type = 'acquirer';
    this.icon = () => h('svg', { width: 32, height: 32, viewBox: '0 0 32 32' },
      h('path', { d: 'M13 19l6-6m-8 2l-2 2a4 4 0 006 6l2-2m2-10l2-2a4 4 0 016 6l-2 2', stroke: '#5a5e69', fill: 'none', 'stroke-width': 2 }));
  }

  static fileFor(url) {
    const name = decodeURIComponent(new URL(url).pathname.split('/').pop() || 'file');
    return { name, type: 'application/octet-stream', data: new Blob([]), source: 'url', meta: { sourceUrl: url }, isRemote: false };
  }

  add(url) {
    try {
      this.uppy.addFile(UrlSource.fileFor(url));
      const dashboard = this.uppy.getPlugin('Dashboard');
      if (dashboard) dashboard.hideAllPanels();
    } catch (err) {
      this.uppy.info((err && err.message) || String(err), 'error', 5000);
    }
  }

  render() {
    const submit = (evt) => {
      evt.preventDefault();
      this.add(evt.target.elements.url.value.trim());
    };
    return h('form', { class: 'stowage-url', onSubmit: submit, style: 'padding:24px;display:flex;gap:8px' },
      h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://...', style: 'flex:1;padding:8px' }),
      h('button', { type: 'submit', class: 'uppy-u-reset uppy-c-btn uppy-c-btn-primary', style: 'padding:8px 16px' }, 'Add'));
  }

  install() {
    const { target } = this.opts;
    if (target) this.mount(target, this);
  }

  uninstall() {
    this.unmount();
  }
}
