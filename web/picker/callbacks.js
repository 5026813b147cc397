// The page's callbacks, and the errors they are given.

// client.upload rejects with the SDK's own objects; the callbacks get an Error.
export function asError(err) {
  if (err instanceof Error) return err;
  const detail = err && (err.message || err.error || err.status);
  const error = new Error(typeof detail === 'string' ? detail : `upload failed: ${JSON.stringify(err)}`);
  error.details = err;
  return error;
}

// A callback that throws is logged; it does not stop the picker.
export function call(fn, ...args) {
  try {
    if (typeof fn === 'function') fn(...args);
  } catch (err) {
    console.error('picker callback failed', err);
  }
}
