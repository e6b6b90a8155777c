#!/usr/bin/env node
// React's development build records every render with performance.measure
// and keeps the entries: the production build is the one to run.
process.env.NODE_ENV ??= 'production';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // The version alone: node's own start and one small read (no CLI module is loaded).
  const { readFileSync } = await import('node:fs');
  let version = 'unknown';
  try {
    version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
  } catch {
    // as PACKAGE_VERSION says when package.json is unreadable
  }
  process.stdout.write(`${version}\n`);
} else {
  // The bundle (scripts/bundle.mjs): a few files for node to load instead of a few hundred.
  const { main } = await import('../dist/bundle/main.js');
  main(process.argv).then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`pak2: internal error: ${error?.stack ?? error}\n`);
      process.exitCode = 70;
    },
  );
}
