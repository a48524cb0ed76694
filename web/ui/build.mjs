// Builds dist/ from src/ (run by `make ui`, or `npm run build` here):
//
//   dist/assets/app-HASH.js, app-HASH.css  the bundle, minified by esbuild
//   dist/assets/licenses-HASH.txt          the licenses of every npm package in it
//   dist/index.html                        src/index.html naming those files
//   dist/SOURCE                            a hash of the sources it was built from
//
// Asset names carry a hash of their content, so ui.go can let browsers cache
// them for good while index.html is revalidated on every load. The output
// depends only on src/ and the versions in package-lock.json: running the build
// twice writes the same bytes.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const dist = 'dist';
const assets = join(dist, 'assets');
await rm(dist, { recursive: true, force: true });
await mkdir(assets, { recursive: true });

const result = await esbuild.build({
  entryPoints: ['src/app.js'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: assets,
  entryNames: '[name]-[hash]',
  legalComments: 'none', // the licenses go to licenses-HASH.txt, whole
  metafile: true,
  logLevel: 'warning',
});

const names = {};
for (const out of Object.keys(result.metafile.outputs)) {
  const file = out.slice(assets.length + 1);
  names[file.replace(/-[A-Z0-9]+(\.\w+)$/, '$1')] = `assets/${file}`;
}

// The licenses of the packages whose code is in the bundle, from each
// package's own LICENSE file.
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = input.match(/^node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) packages.add(m[1]);
}
let licenses = 'Third-party software in this page\'s bundle (dist/assets/app-*.js, app-*.css),\n' +
  'with the license text each package ships.\n';
for (const name of [...packages].sort()) {
  const dir = join('node_modules', name);
  const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
  const file = (await readdir(dir)).find((f) => /^(licen[cs]e|copying)(\.\w+)?$/i.test(f));
  licenses += `\n${'='.repeat(78)}\n${name} ${pkg.version} (${pkg.license})\n${'='.repeat(78)}\n\n`;
  licenses += file ? (await readFile(join(dir, file), 'utf8')).trim() + '\n' : `${pkg.license}; no license file in the package.\n`;
}
const hash = createHash('sha256').update(licenses).digest('hex').slice(0, 8).toUpperCase();
names['licenses.txt'] = `assets/licenses-${hash}.txt`;
await writeFile(join(dist, names['licenses.txt']), licenses);

let html = await readFile('src/index.html', 'utf8');
html = html.replace(/\{\{([\w.]+)\}\}/g, (_, name) => {
  if (!names[name]) throw new Error(`src/index.html names {{${name}}}, which the build did not write`);
  return names[name];
});
await writeFile(join(dist, 'index.html'), html);

// dist/SOURCE is a hash of everything the build read, which ui_test.go
// computes again: a test fails when src/ changed and dist/ was not rebuilt.
const sources = ['build.mjs', 'package.json', 'package-lock.json',
  ...(await readdir('src', { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name))].sort();
const sourceHash = createHash('sha256');
for (const f of sources) {
  sourceHash.update(`${f}\0`).update(await readFile(f)).update('\0');
}
await writeFile(join(dist, 'SOURCE'), `sha256:${sourceHash.digest('hex')}\n`);

for (const [name, path] of Object.entries(names)) {
  const size = (await readFile(join(dist, path))).length;
  console.log(`${path.padEnd(32)} ${(size / 1024).toFixed(1).padStart(7)} KiB  (${name})`);
}
if (!existsSync(dirname(join(dist, names['app.js'])))) throw new Error('no bundle written');
