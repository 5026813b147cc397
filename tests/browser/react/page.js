// A customer's React page: filestack-react's picker components, unchanged, with only
// `cname` in clientOptions. Bundled by esbuild at test time (tests/browser/test_picker_react.py).
import React from 'react';
import { createRoot } from 'react-dom/client';
import { PickerDropPane, PickerInline, PickerOverlay } from 'filestack-react';

const params = new URLSearchParams(location.search);
const root = createRoot(document.getElementById('root'));
window.done = null;
window.errors = [];

// Rendered once per call: the components make a new picker whenever they render again.
window.show = (kind, pickerOptions) => {
  const Picker = { inline: PickerInline, overlay: PickerOverlay, dropPane: PickerDropPane }[kind];
  root.render(React.createElement(Picker, {
    apikey: params.get('apikey'),
    clientOptions: { cname: params.get('cname') },
    pickerOptions,
    onUploadDone: (result) => { window.done = result; },
    onError: (err) => window.errors.push(String(err)),
  }));
};
