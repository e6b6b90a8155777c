#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`pak2: internal error: ${error?.stack ?? error}\n`);
    process.exitCode = 70;
  },
);
