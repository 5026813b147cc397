// The hosted picker's file metadata (PickerFileMetadata in filestack-js's picker.d.ts).

function source(file) {
  if (file.meta && file.meta.sourceUrl) return 'url';
  if (file.meta && file.meta.stored) return 'customsource';
  return file.source === 'Webcam' ? 'webcam' : 'local_file_system';
}

// The file as picked: a rename by onFileSelected changes file.name, not the File.
function original(file) {
  const name = (file.data && file.data.name) || file.name;
  return { name, type: file.type, size: file.size };
}

// What onFileSelected, onUploadStarted and the failure callbacks receive.
export function selected(file) {
  return {
    source: source(file),
    mimetype: file.type || 'application/octet-stream',
    filename: file.name,
    size: (file.meta && file.meta.stored && file.meta.stored.size) || file.size || 0,
    uploadId: file.id,
    originalPath: (file.meta && file.meta.sourceUrl) || original(file).name,
    originalFile: original(file),
  };
}

// What onFileUploadFinished and onUploadDone's filesUploaded receive.
export function hosted(file, stored) {
  return {
    ...selected(file),
    filename: stored.filename || file.name,
    handle: stored.handle,
    url: stored.url,
    mimetype: stored.mimetype || file.type || 'application/octet-stream',
    size: stored.size !== undefined ? stored.size : file.size,
    status: stored.status || 'Stored',
    key: stored.key,
    container: stored.container,
    alt: '',
  };
}
