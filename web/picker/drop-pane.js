// displayMode 'dropPane': a drop area in `container` instead of the Dashboard, with the
// options of filestack-js's PickerDropPaneOptions. Files dropped (or chosen by a click)
// go to the Uppy instance, which uploads them at once; `overlay` makes the whole page a
// drop zone while something is dragged over it.

import { call } from './callbacks.js';

const ICON = '<svg width="40" height="40" viewBox="0 0 32 32" aria-hidden="true"><path d="M16 22V8m-6 6l6-6 6 6M6 24h20" stroke="#5a5e69" stroke-width="2" fill="none"/></svg>';
const PANE = 'display:flex;flex-direction:column;align-items:center;justify-content:center;gap:8px;'
  + 'min-height:140px;border:2px dashed #9aa0ab;border-radius:8px;color:#3b3f47;cursor:pointer;font:15px sans-serif';
const OVERLAY = 'position:fixed;inset:0;z-index:10000;display:none;align-items:center;justify-content:center;'
  + 'background:rgba(34,117,215,.85);color:#fff;font:24px sans-serif';

export class DropPane {
  // opts: the picker's dropPane options; add(files) hands File objects to the picker.
  constructor(container, opts, add, accept) {
    this.opts = opts || {};
    this.add = add;
    this.text = this.opts.customText || 'Drag and Drop, Copy and Paste Files';
    this.pane = document.createElement('div');
    this.pane.className = 'stowage-drop-pane';
    this.pane.style.cssText = PANE;
    this.pane.innerHTML = `${this.opts.showIcon === false ? '' : `<span class="stowage-drop-pane-icon">${ICON}</span>`}`
      + '<span class="stowage-drop-pane-text"></span><span class="stowage-drop-pane-progress"></span>'
      + `<input type="file" multiple hidden${accept ? ` accept="${accept.join(',')}"` : ''}>`;
    this.say(this.text);
    this.input = this.pane.querySelector('input');
    this.input.addEventListener('change', () => this.take([...this.input.files]));
    this.pane.addEventListener('click', (evt) => this.click(evt));
    this.listen(this.pane);
    container.appendChild(this.pane);
    if (this.opts.overlay) this.makeOverlay();
  }

  say(text) {
    this.pane.querySelector('.stowage-drop-pane-text').textContent = text;
  }

  click(evt) {
    call(this.opts.onClick, evt);
    if (!this.opts.disableClick && evt.target !== this.input) this.input.click();
  }

  listen(el) {
    el.addEventListener('dragenter', (evt) => { evt.preventDefault(); call(this.opts.onDragEnter, evt); });
    el.addEventListener('dragover', (evt) => { evt.preventDefault(); call(this.opts.onDragOver, evt); });
    el.addEventListener('dragleave', () => { this.hideOverlay(); call(this.opts.onDragLeave); });
    el.addEventListener('drop', (evt) => {
      evt.preventDefault();
      evt.stopPropagation();
      this.hideOverlay();
      call(this.opts.onDrop, evt);
      this.take([...((evt.dataTransfer && evt.dataTransfer.files) || [])]);
    });
  }

  // The page-wide drop zone: shown when a drag enters the page, hidden when it leaves it.
  makeOverlay() {
    this.overlay = document.createElement('div');
    this.overlay.className = 'stowage-drop-pane-overlay';
    this.overlay.style.cssText = OVERLAY;
    this.overlay.textContent = this.text;
    this.listen(this.overlay);
    // A drag entering the page elsewhere; over the pane or the overlay, listen() has it.
    this.showOverlay = (evt) => {
      if (this.overlay.contains(evt.target) || this.pane.contains(evt.target)) return;
      this.overlay.style.display = 'flex';
      call(this.opts.onDragEnter, evt);
    };
    document.addEventListener('dragenter', this.showOverlay);
    document.body.appendChild(this.overlay);
  }

  hideOverlay() {
    if (this.overlay) this.overlay.style.display = 'none';
  }

  take(files) {
    if (files.length) this.add(files);
    this.input.value = '';
  }

  // Bytes sent of each file being uploaded: the pane shows the whole batch's percent.
  progress(id, sent, size) {
    this.sent = this.sent || new Map();
    this.sent.set(id, [sent, size]);
    const [done, total] = [...this.sent.values()].reduce(([a, b], [c, d]) => [a + c, b + d], [0, 0]);
    const percent = total ? Math.round((100 * done) / total) : 100;
    if (this.opts.showProgress !== false) {
      this.pane.querySelector('.stowage-drop-pane-progress').textContent = `${Math.round(percent)}%`;
    }
    call(this.opts.onProgress, percent);
  }

  done(result) {
    this.sent = null;
    if (result.filesUploaded.length) call(this.opts.onSuccess, result.filesUploaded);
    if (result.filesFailed.length) call(this.opts.onError, result.filesFailed);
  }

  remove() {
    if (this.overlay) {
      document.removeEventListener('dragenter', this.showOverlay);
      this.overlay.remove();
    }
    this.pane.remove();
  }
}
