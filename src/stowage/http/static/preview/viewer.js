// The preview page's script (src/stowage/http/preview.py): a PDF drawn page by page with
// pdf.js (vendored by scripts/vendor-web), each page a canvas as wide as the page allows.
// Loaded as a module under the page's nonce; pdf.js comes in through this import.
import * as pdfjs from './pdfjs/pdf.min.mjs';

const MAX_PAGES = 200; // more than this: the first ones, and a note to download the rest
const view = document.getElementById('view');
const vendor = new URL('./pdfjs/', import.meta.url).href;

function note(className, text) {
  const p = document.createElement('p');
  p.className = className;
  p.textContent = text;
  view.appendChild(p);
}

async function drawPage(pdf, number, width) {
  const page = await pdf.getPage(number);
  const ratio = window.devicePixelRatio || 1;
  const scale = width / page.getViewport({ scale: 1 }).width;
  const viewport = page.getViewport({ scale: scale * ratio });
  const canvas = document.createElement('canvas');
  canvas.className = 'page';
  canvas.width = Math.floor(viewport.width);
  canvas.height = Math.floor(viewport.height);
  canvas.style.width = `${Math.floor(viewport.width / ratio)}px`;
  canvas.setAttribute('aria-label', `Page ${number}`);
  view.appendChild(canvas);
  await page.render({ canvas, canvasContext: canvas.getContext('2d'), viewport }).promise;
  canvas.dataset.drawn = 'true';
  page.cleanup();
}

async function showPdf() {
  pdfjs.GlobalWorkerOptions.workerSrc = `${vendor}pdf.worker.min.mjs`;
  const pdf = await pdfjs.getDocument({
    url: new URL(view.dataset.src, window.location.href).href,
    isEvalSupported: false, // the policy allows no eval; pdf.js draws glyphs without it
    cMapUrl: `${vendor}cmaps/`,
    cMapPacked: true,
    standardFontDataUrl: `${vendor}standard_fonts/`,
    wasmUrl: `${vendor}wasm/`,
  }).promise;
  view.dataset.pages = String(pdf.numPages);
  const width = Math.max(200, Math.min(view.clientWidth || 800, 1200));
  const shown = Math.min(pdf.numPages, MAX_PAGES);
  for (let number = 1; number <= shown; number += 1) {
    await drawPage(pdf, number, width);
  }
  if (pdf.numPages > shown) {
    note('more', `${pdf.numPages - shown} more pages: download the file to read them.`);
  }
}

if (view && view.dataset.kind === 'pdf') {
  view.dataset.state = 'loading';
  showPdf().then(
    () => { view.dataset.state = 'done'; },
    (err) => {
      view.dataset.state = 'failed';
      note('error', `This PDF cannot be shown: ${err && err.message ? err.message : err}`);
    },
  );
}
