#!/usr/bin/env node
// React's development build records every render with performance.measure
// and keeps the entries: the production build is the one to run.
process.env.NODE_ENV ??= 'production';
const { main } = await import('../dist/cli/main.js');

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`pak2: internal error: ${error?.stack ?? error}\n`);
    process.exitCode = 70;
  },
);
