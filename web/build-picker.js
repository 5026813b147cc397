// Bundles web/picker/ (Uppy and Stowage's picker glue) into one browser script with
// esbuild; run by scripts/vendor-web. Usage: node build-picker.js <outfile>
'use strict';
const esbuild = require('esbuild');

esbuild
  .build({
    entryPoints: [`${__dirname}/picker/picker.js`],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2019',
    loader: { '.css': 'text' },
    legalComments: 'eof', // Uppy's and preact's licence headers stay in the file
    outfile: process.argv[2],
  })
  .catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
