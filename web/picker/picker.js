// Stowage's picker module: what filestack-js's client.picker(options) loads from
// static.<cname>/picker/<version>/picker.js (docs/filestack.md, "The picker").
// Built on Uppy (@uppy/core, @uppy/dashboard, @uppy/image-editor, @uppy/webcam, MIT);
// bundled by scripts/vendor-web with esbuild into one script. Uploads go through the
// SDK's own client.upload (the Filestack multipart protocol, with progress); a URL goes
// through client.storeURL; a file the app already stores is linked (app-storage.js).
import Uppy from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import ImageEditor from '@uppy/image-editor';
import Webcam from '@uppy/webcam';
import coreCss from '@uppy/core/css/style.min.css';
import dashboardCss from '@uppy/dashboard/css/style.min.css';
import editorCss from '@uppy/image-editor/css/style.min.css';
import webcamCss from '@uppy/webcam/css/style.min.css';
import { UrlSource } from './url-source.js';
import { DropPane } from './drop-pane.js';
import { AppStorage, linked } from './app-storage.js';
import { hosted, selected } from './shape.js';
import { cropping, restrictions, target } from './options.js';
import { asError, call } from './callbacks.js';

const VERSION = '4.5.2';
const LOCAL = 'local_file_system';

function injectCss() {
  if (document.getElementById('stowage-picker-css')) return;
  const style = document.createElement('style');
  style.id = 'stowage-picker-css';
  style.textContent = coreCss + dashboardCss + editorCss + webcamCss;
  document.head.appendChild(style);
}

class Picker {
  constructor(client, options) {
    this.client = client;
    this.options = options || {};
    this.dropping = this.options.displayMode === 'dropPane';
    this.uppy = null;
    this.checks = new Map();
  }

  build() {
    injectCss();
    const o = this.options;
    const sources = o.fromSources || [LOCAL, 'url'];
    const uppy = new Uppy({
      id: o.rootId || 'stowage-picker',
      autoProceed: o.uploadInBackground === true || this.dropping,
      restrictions: restrictions(this.options),
    });
    uppy.on('file-added', (file) => this.selected(file));
    uppy.addUploader((ids) => this.upload(ids));
    if (this.dropping) return this.dropPane(uppy);
    const inline = o.displayMode === 'inline';
    const crop = cropping(o);
    uppy.use(Dashboard, {
      autoOpen: crop && crop.force ? 'imageEditor' : null,
      inline,
      target: target(o),
      proudlyDisplayPoweredByUppy: false,
      closeModalOnClickOutside: false,
      hideUploadButton: false,
      disableLocalFiles: !sources.includes(LOCAL),
      onRequestCloseModal: () => this.close(),
      height: inline ? 420 : undefined,
    });
    if (crop) {
      uppy.use(ImageEditor, crop.editor);
      uppy.on('file-editor:complete', (file) => call(o.onFileCropped, selected(file)));
    }
    if (sources.includes('webcam')) {
      // Pictures only (the hosted 'webcam'); the browser asks for the camera on opening.
      uppy.use(Webcam, { target: Dashboard, modes: ['picture'], mirror: true, preferredImageMimeType: 'image/jpeg' });
    }
    if (sources.includes('url')) {
      uppy.use(UrlSource, { target: Dashboard });
    }
    if (sources.includes('customsource')) {
      uppy.use(AppStorage, {
        target: Dashboard, client: this.client, title: o.customSourceName,
        container: o.customSourceContainer, path: o.customSourcePath,
      });
    }
    return uppy;
  }

  // No Dashboard: the pane adds what is dropped, says what Uppy refuses, shows progress.
  dropPane(uppy) {
    const o = this.options;
    const add = (files) => files.forEach((data) => {
      try {
        uppy.addFile({ name: data.name, type: data.type, data, source: LOCAL });
      } catch (err) {
        this.pane.say(err.message); // a restriction: Uppy names the file and the limit
      }
    });
    this.pane = new DropPane(target(o), o.dropPane, add, restrictions(this.options).allowedFileTypes);
    uppy.on('info-visible', () => {
      const info = [].concat(uppy.getState().info || []).pop();
      if (info && info.message) this.pane.say(info.message);
    });
    return uppy;
  }

  // onFileSelected may throw, reject, or return a file with another name.
  selected(file) {
    const check = Promise.resolve()
      .then(() => (this.options.onFileSelected ? this.options.onFileSelected(selected(file)) : null))
      .then((changed) => {
        const name = changed && (changed.filename || changed.name);
        if (name && name !== file.name) this.uppy.setFileState(file.id, { name, meta: { ...file.meta, name } });
      })
      .catch((err) => {
        this.uppy.removeFile(file.id);
        this.uppy.info((err && err.message) || String(err), 'error', 5000);
      })
      .finally(() => this.checks.delete(file.id));
    this.checks.set(file.id, check);
  }

  async upload(ids) {
    await Promise.all([...this.checks.values()]);
    const files = ids.map((id) => this.uppy.getFile(id)).filter(Boolean);
    call(this.options.onUploadStarted, files.map(selected));
    const done = { filesUploaded: [], filesFailed: [] };
    await Promise.all(files.map((file) => this.uploadOne(file, done)));
    if (this.pane) this.pane.done(done);
    call(this.options.onUploadDone, done);
    if (!this.dropping && this.options.displayMode !== 'inline' && done.filesFailed.length === 0) {
      await this.close();
    }
  }

  async uploadOne(file, done) {
    const o = this.options;
    const uppy = this.uppy;
    let finish = () => {};
    try {
      let stored;
      if (file.meta.stored) {
        stored = linked(file.meta.stored, this.client);
      } else if (file.meta.sourceUrl) {
        stored = await this.client.storeURL(file.meta.sourceUrl, { ...(o.storeTo || {}), filename: file.name });
      } else {
        // The SDK reports on an interval (never lower than before: it keeps the highest)
        // and stops at the end, maybe short of 100; the last report is 100, as hosted.
        let last = 0;
        const progress = (evt) => {
          last = evt.totalPercent;
          const bytes = Math.round((evt.totalPercent / 100) * file.size);
          uppy.emit('upload-progress', uppy.getFile(file.id), {
            uploadStarted: Date.now(), bytesUploaded: bytes, bytesTotal: file.size,
          });
          call(o.onFileUploadProgress, selected(file), evt);
          if (this.pane) this.pane.progress(file.id, bytes, file.size);
        };
        finish = () => last < 100 && progress({ totalPercent: 100, totalBytes: file.size });
        const upload = { ...(o.uploadConfig || {}), onProgress: progress };
        stored = await this.client.upload(file.data, upload, { ...(o.storeTo || {}), filename: file.name });
      }
      finish();
      const meta = hosted(file, stored);
      uppy.emit('upload-success', uppy.getFile(file.id), { status: 200, body: stored, uploadURL: meta.url });
      done.filesUploaded.push(meta);
      call(o.onFileUploadFinished, meta);
    } catch (raw) {
      const err = asError(raw);
      const meta = selected(file);
      uppy.emit('upload-error', uppy.getFile(file.id), err);
      done.filesFailed.push(meta);
      call(o.onFileUploadFailed, meta, err);
    }
  }

  async open() {
    this.closed = false;
    if (!this.uppy) {
      await this.prefetch();
      // Closed while the prefetch ran (filestack-react closes on every new render).
      if (this.closed) return;
      this.uppy = this.build();
    }
    const dashboard = this.uppy.getPlugin('Dashboard');
    if (dashboard && this.options.displayMode !== 'inline') dashboard.openModal();
    call(this.options.onOpen, this);
  }

  async prefetch() {
    if (typeof this.client.prefetch !== 'function') return;
    const answer = await this.client.prefetch({ events: ['picker'] });
    if (answer && answer.blocked) throw new Error('picker: this app may not use the picker');
  }

  async close() {
    this.closed = true;
    if (!this.uppy) return;
    const uppy = this.uppy;
    this.uppy = null;
    if (this.pane) this.pane.remove();
    this.pane = null;
    uppy.destroy();
    call(this.options.onClose);
  }

  async cancel() {
    if (!this.uppy) return;
    this.uppy.cancelAll();
    call(this.options.onCancel, { filesUploaded: [], filesFailed: [] });
  }

  // The files are added to the picker, the first image opened in the crop editor.
  // (URLs are added as links: Stowage fetches them, so they are not cropped.)
  async crop(files) {
    await this.open();
    const ids = [];
    for (const item of files || []) {
      if (typeof item === 'string') {
        ids.push(this.uppy.addFile(UrlSource.fileFor(item)));
      } else {
        ids.push(this.uppy.addFile({ name: item.name, type: item.type, data: item, source: LOCAL }));
      }
    }
    const image = ids.map((id) => this.uppy.getFile(id)).find((f) => f && /^image\//.test(f.type));
    if (image && this.uppy.getPlugin('ImageEditor')) this.uppy.getPlugin('Dashboard').openFileEditor(image);
  }
}

// The SDK's loader (@filestack/loader) waits for the module to register under its id.
(function register() {
  const internals = (window.filestackInternals = window.filestackInternals || {});
  const modules = (internals.modules = internals.modules || {});
  modules['fs-loader-picker'] = { instance: Picker, metadata: { version: VERSION, by: 'stowage' } };
})();
