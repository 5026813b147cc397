// The picker's options (filestack-js's PickerOptions) turned into what Uppy takes.

// displayMode inline and dropPane go in `container` (a selector, an id or an element).
export function target(options) {
  if (options.displayMode !== 'inline' && options.displayMode !== 'dropPane') return document.body;
  const c = options.container;
  const el = typeof c === 'string' ? document.querySelector(c) || document.getElementById(c) : c;
  if (!el) throw new Error(`picker: container ${c} not found`);
  return el;
}

// transformations.crop: true (default), false, or {aspectRatio, force}; rotate: boolean.
export function cropping(options) {
  const t = options.transformations || {};
  if (options.disableTransformer || t.crop === false) return null;
  const crop = typeof t.crop === 'object' && t.crop ? t.crop : {};
  const ratio = typeof crop.aspectRatio === 'number' ? crop.aspectRatio : null;
  const free = ratio === null;
  return {
    force: Boolean(crop.force || t.force),
    editor: {
      cropperOptions: ratio ? { aspectRatio: ratio, initialAspectRatio: ratio } : {},
      actions: {
        rotate: t.rotate !== false,
        granularRotate: t.rotate !== false,
        cropSquare: free,
        cropWidescreen: free,
        cropWidescreenVertical: free,
      },
    },
  };
}

// accept, maxFiles, minFiles, maxSize as Uppy's restrictions.
export function restrictions(o) {
  const accept = o.accept ? [].concat(o.accept) : null;
  return {
    allowedFileTypes: accept,
    maxNumberOfFiles: o.maxFiles || 1,
    minNumberOfFiles: o.minFiles || 1,
    maxFileSize: o.maxSize || null,
  };
}
