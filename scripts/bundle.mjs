#!/usr/bin/env node
// The CLI's bundle (npm run build, after tsc): dist/cli/main.js and what it
// imports, node_modules included, as ES modules in dist/bundle/, split at
// every dynamic import, so a command still loads only what it uses (each
// command module, Ink and the workbench, the driver code are chunks of their
// own). Node loads a handful of files instead of a few hundred: zod alone is
// ~95 modules, and their resolution, reads and compiles cost `pak2 goals`
// more than its work on a small garden (issue 13). bin/pak2.js runs the
// bundle; tests run source/ (vitest) or the bundle (through bin/pak2.js).
// dist/bundle/meta.json (esbuild's metafile) names the modules in each chunk:
// test/scale/lazy-cli.test.ts reads it to tell which modules a command loaded.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * zod's `locales` namespace re-exports every locale (~360 KB of the bundle,
 * parsed at start); pak2 validates with English messages only, which zod
 * registers itself (classic/schemas.js imports locales/en.js), and never
 * reads `z.locales`. The namespace keeps `en` alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)) return undefined;
      return { path: path.join(path.dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' };
    });
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(path.join(path.dirname(args.path), 'en.js'))};\n`,
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};
/**
 * @sindresorhus/transliterate (slugify's, for a goal id's slug) builds one
 * big regex of its replacements per locale when it is imported; pak2 passes
 * no locale, so only the default one is ever used. The locale patterns are
 * built on their first use instead, the same code moved into a function
 * (its output unchanged). Left as it is, with a warning, if its source no
 * longer reads as expected.
 */
const transliterateLocalesOnUse = {
  name: 'transliterate-locales-on-use',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]@sindresorhus[\\/]transliterate[\\/]index\.js$/ }, (args) => {
      const source = fs.readFileSync(args.path, 'utf8');
      const loop = 'for (const [locale, localeMap] of Object.entries(localeReplacements)) {';
      const after = '\nconst normalizeLocale';
      const use = '({replacements, pattern} = localeCache.get(normalizedLocale));';
      const start = source.indexOf(loop);
      const end = source.indexOf(after, start);
      if (start < 0 || end < 0 || source.split(use).length !== 2) {
        return { contents: source, loader: 'js', warnings: [{ text: 'transliterate: source not as expected; its locale patterns stay built at import' }] };
      }
      const contents = `${source.slice(0, start)}const fillLocaleCache = () => {\nif (localeCache.size > 0) return;\n${source.slice(start, end)}};\n${source.slice(end)}`.replace(use, `fillLocaleCache();\n\t\t${use}`);
      return { contents, loader: 'js' };
    });
  },
};

const outdir = path.join(root, 'dist', 'bundle');
const result = await build({
  absWorkingDir: root,
  entryPoints: ['dist/cli/main.js'],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // Left to node_modules, loaded as before and only where used: the workbench's Ink and React (the
  // interactive path, not a command's start), and pak2 serve's fastify, whose logger starts worker
  // threads from files beside its own (pino's transports). Ink loads react-devtools-core only with
  // DEV=true; it is not installed.
  external: ['ink', 'react', 'react/*', 'fastify', '@fastify/*', 'react-devtools-core'],
  // Bundled CommonJS (commander, proper-lockfile, write-file-atomic, …) calls require for node's own
  // modules, and reads __filename.
  banner: {
    js: [
      "import { createRequire as __pak2Require } from 'node:module';",
      "import { fileURLToPath as __pak2Path } from 'node:url';",
      'const require = __pak2Require(import.meta.url);',
      'const __filename = __pak2Path(import.meta.url);',
      "const __dirname = __pak2Path(new URL('.', import.meta.url));",
    ].join(' '),
  },
  plugins: [zodEnglishOnly, transliterateLocalesOnUse],
  metafile: true,
  write: false,
  legalComments: 'none',
  logLevel: 'warning',
});

// Written file by file, each atomically (temp file, rename), chunks before the entry that names them,
// and chunks no entry names any more removed an hour later: a pak2 that runs while the bundle is
// rebuilt (another test run's build) never reads half a file, nor misses a chunk its entry names.
const write = (file, contents) => {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, contents);
  fs.renameSync(temp, file);
};
const entry = path.join(outdir, 'main.js');
const outputs = [...result.outputFiles].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
for (const file of outputs) {
  const current = fs.existsSync(file.path) ? fs.readFileSync(file.path) : undefined;
  if (!current || !current.equals(file.contents)) write(file.path, file.contents);
}
write(path.join(outdir, 'meta.json'), JSON.stringify(result.metafile));
const kept = new Set(outputs.map((f) => f.path));
const chunks = path.join(outdir, 'chunks');
for (const name of fs.readdirSync(chunks)) {
  const file = path.join(chunks, name);
  if (kept.has(file)) continue;
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (stat && Date.now() - stat.mtimeMs > 3600_000) fs.rmSync(file, { force: true });
}
